"""Subject-supplied text in every output format (``_report/text.py``), the bounded
``short_repr``, streaming report writes (``atomic``), the expectations index, and the
``-n`` bound: in-process, no subprocess."""

from __future__ import annotations

import copy
import errno
import os
import re
import stat
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstate.conformance._harness import atomic
from sessionstate.conformance._harness.expectations import (
    Expectation,
    Expectations,
    first_for_test,
    parse_expectations,
    unmatched,
)
from sessionstate.conformance._harness.runner import CheckOptions, _check_workers, max_workers
from sessionstate.conformance._report import junit, matrix, terminal
from sessionstate.conformance._report.text import (
    html_text,
    markdown_cell,
    short_repr,
    terminal_text,
)
from sessionstate.conformance.checks import ClauseFailure, check_equal
from sessionstate.conformance.subject import UsageError

#: Any text, control characters and bidi overrides included (no lone surrogates: they
#: cannot be written as UTF-8 at all).
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
#: Characters no terminal line may carry once escaped.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def results(subject: str = "s", note: str = "n", entry: str = "e") -> dict[str, Any]:
    """A results JSON as ``check --report-json`` writes it, with subject-supplied text."""
    clause = {"level": "MUST", "tests": ["test_env.py::test_a"], "seconds": 0.5}
    return {
        "subject": subject, "target": f"m:{subject}", "suite_version": "1", "profile": "quick",
        "seed": None, "verdict": "non-conformant", "interrupted": False, "strict": False,
        "seconds": 2.0, "capabilities": ["threadsafe"], "unmatched_expectations": [entry],
        "environment": {"torch": "2", "numpy": "1", "hypothesis": "6",
                        "devices": [{"name": "cpu", "simulated": False}], "devices_left_out": []},
        "clauses": {
            "ENV-1": {**clause, "outcome": "failed", "message": note},
            "ENV-2": {**clause, "outcome": "passed", "message": ""},
        },
        "tests": [{"nodeid": "test_env.py::test_a", "outcome": "failed", "message": note}],
    }  # fmt: skip


def cells(row: str) -> list[str]:
    """A Markdown table row's cells: split at each ``|`` not escaped by a backslash."""
    out, cell, escaped = [], "", False
    for char in row.strip():
        if escaped:
            cell, escaped = cell + char, False
        elif char == "\\":
            cell, escaped = cell + char, True
        elif char == "|":
            out.append(cell)
            cell = ""
        else:
            cell += char
    return out[1:]  # the text before the first | is empty


@settings(max_examples=150, deadline=None)
@given(subject=texts, note=texts, entry=texts)
def test_terminal_table_cannot_be_forged(subject: str, note: str, entry: str) -> None:
    lines = terminal.table_lines(results(subject, note, entry))
    assert len(lines) == len(terminal.table_lines(results()))  # no line added or removed
    assert [line for line in lines if line.startswith("verdict:")] == [lines[-1]]
    assert lines[-1].startswith("verdict: NON-CONFORMANT ")
    assert not any(UNSAFE.search(line) for line in lines)


@settings(max_examples=150, deadline=None)
@given(subject=texts, note=texts, entry=texts)
def test_markdown_summary_rows_keep_their_cells(subject: str, note: str, entry: str) -> None:
    text = terminal.markdown(results(subject, note, entry))
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert len(rows) == 4 and all(len(cells(row)) == 6 for row in rows), rows
    assert len(text.splitlines()) == len(terminal.markdown(results()).splitlines())
    assert "<" not in text and "\x1b" not in text


@settings(max_examples=150, deadline=None)
@given(subject=texts)
def test_matrix_markdown_rows_keep_their_cells(subject: str) -> None:
    text = matrix.to_markdown([results(subject), results("other")])
    rows = text.splitlines()
    assert len(rows) == 4 and all(len(cells(row)) == 3 for row in rows), rows
    assert "<" not in text


@settings(max_examples=60, deadline=None)
@given(subject=texts, note=texts)
def test_html_page_gets_no_tag_from_the_subject(subject: str, note: str) -> None:
    page = matrix.to_html([results("s" + subject, "n" + note)])  # a note is shown when not empty
    plain = matrix.to_html([results("s", "n")])
    assert page.count("<") == plain.count("<")
    assert not re.search("[\u202a-\u202e\u2066-\u2069\x1b]", page)


@settings(max_examples=100, deadline=None)
@given(subject=texts, note=texts)
def test_junit_xml_parses_and_keeps_the_text(subject: str, note: str) -> None:
    document = junit.to_junit_xml(results(subject, note))
    root = ET.fromstring(document.encode("utf-8"))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == junit._clean(subject)
    assert len(root.findall(".//testcase")) == 2
    failure = root.find(".//failure")
    assert failure is not None and failure.get("message") == junit._clean(note)


@pytest.mark.parametrize(
    ("text", "terminal_form", "markdown_form", "html_form"),
    [
        ("a\x1b[32mb", "a\\x1b[32mb", "a\\\\x1b\\[32mb", "a\\x1b[32mb"),
        ("x\r\ny", "x\\r\\ny", "x\\\\r\\\\ny", "x\\r\ny"),
        ("\u202eevil", "\\u202eevil", "\\\\u202eevil", "\\u202eevil"),
        ("<img onerror=alert(1)>", "<img onerror=alert(1)>",
         "&lt;img onerror=alert(1)&gt;", "&lt;img onerror=alert(1)&gt;"),
        ("a|b `c` & d", "a|b `c` & d", "a\\|b \\`c\\` &amp; d", "a|b `c` &amp; d"),
    ],
)  # fmt: skip
def test_escapes(text: str, terminal_form: str, markdown_form: str, html_form: str) -> None:
    assert terminal_text(text) == terminal_form
    assert markdown_cell(text) == markdown_form
    assert html_text(text) == html_form


def test_short_repr_keeps_small_values_and_bounds_a_million_keys() -> None:
    assert short_repr({"nbytes:cpu": 320, "sessions": [1, 2]}) == repr(
        {"nbytes:cpu": 320, "sessions": [1, 2]}
    )
    huge = {f"key{i}": i for i in range(10**6)}
    started = time.monotonic()
    shown = short_repr(huge)
    assert time.monotonic() - started < 60
    assert shown.startswith("{'key0': 0, 'key1': 1,") and shown.endswith("... 999,992 more}")
    assert len(shown) < 300
    assert len(short_repr("x" * 10**6)) <= 240


def test_short_repr_of_a_value_whose_repr_raises() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert short_repr(Broken()) == "<Broken object>"


def test_a_failure_quoting_a_million_key_stats_is_short() -> None:
    stats = {f"nbytes:{i}": i for i in range(10**6)}
    with pytest.raises(ClauseFailure) as failure:
        check_equal(stats, {"nbytes:cpu": 0}, "STATS-1", "stats()")
    message = str(failure.value)
    assert len(message) < 500 and "999,992 more" in message and message.endswith("[STATS-1]")


# -- atomic: files replaced, streams written in place -------------------------------------


@pytest.fixture
def no_replace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream must never be replaced: os.replace fails the test instead of /dev/null."""

    def refuse(src: Any, dst: Any, **kwargs: Any) -> None:
        raise AssertionError(f"os.replace({dst!r})")

    monkeypatch.setattr(os, "replace", refuse)


def test_dev_null_is_written_in_place(no_replace: None) -> None:
    atomic.write_text_atomic("/dev/null", "report\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_dev_full_is_a_write_error(no_replace: None) -> None:
    with pytest.raises(OSError) as error:
        atomic.write_text_atomic("/dev/full", "report\n" * 1000)
    assert error.value.errno == errno.ENOSPC
    assert atomic.write_error(error.value) == "No space left on device"


def test_fifo_reader_gets_the_report(tmp_path: Path, no_replace: None) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the open does not wait
    try:
        atomic.write_text_atomic(fifo, "report\n")
        assert os.read(reader, 100) == b"report\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_descriptor_paths_are_streams_and_files_are_not(tmp_path: Path) -> None:
    assert atomic.is_stream("/dev/stdout") and atomic.is_stream("/dev/fd/1")
    assert atomic.is_stream("/dev/null")
    assert not atomic.is_stream(tmp_path) and not atomic.is_stream(tmp_path / "absent")
    (tmp_path / "f").write_text("x", encoding="utf-8")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    assert not atomic.is_stream(tmp_path / "f") and not atomic.is_stream(tmp_path / "link")


def test_a_link_to_a_file_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("old", encoding="utf-8")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    atomic.write_text_atomic(tmp_path / "link", "new")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "f").read_text() == "new"


def test_no_probe_file_next_to_a_device(monkeypatch: pytest.MonkeyPatch) -> None:
    from sessionstate.conformance._harness import runner

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("probed next to a device")

    monkeypatch.setattr(runner.tempfile, "NamedTemporaryFile", refuse)
    runner._check_writable("--junitxml", "/dev/null")


# -- expectations: the index finds what the scan found ------------------------------------

ids = st.sampled_from(["test_a", "test_b", "test_a[1]", "test_b[x::y]", "test_a[2]]"])
modules = st.sampled_from(["", "test_env.py::", "suite/test_env.py::", "x/test_lru.py::"])


@settings(max_examples=200, deadline=None)
@given(
    targets=st.lists(st.tuples(modules, ids).map("".join), max_size=8),
    nodeid=st.tuples(st.sampled_from(["conformance/suite/test_env.py::", "test_lru.py::"]), ids),
)
def test_the_index_matches_as_the_scan_did(targets: list[str], nodeid: tuple[str, str]) -> None:
    node = "".join(nodeid)
    entries = Expectations(Expectation(t, "xfail", "r", n) for n, t in enumerate(targets, 1))
    scanned = [e for e in entries if e.matches_test(node)]
    assert first_for_test(entries, node) == (scanned[0] if scanned else None)
    left = unmatched(copy.copy(entries), [(node, [])])
    assert left == [e for e in entries if e not in scanned]


def test_a_200k_line_file_is_linear(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("".join(f"test_x{i} xfail r\n" for i in range(200_000)), encoding="utf-8")
    started = time.monotonic()
    entries = parse_expectations(path)
    nodeids = [f"test_lru.py::test_case{i}[{j}]" for i in range(30) for j in range(5)]
    for nodeid in nodeids:
        assert first_for_test(entries, nodeid) is None
    assert len(unmatched(entries, [(n, ["LRU-1"]) for n in nodeids])) == 200_000
    assert time.monotonic() - started < 60  # the scan it replaces took about 350 s


# -- -n ------------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", ["0", "1", "auto", "logical", str(max_workers())])
def test_workers_within_the_bound(workers: str) -> None:
    _check_workers(CheckOptions(workers=workers))


def test_workers_above_the_bound() -> None:
    with pytest.raises(UsageError, match=rf"-n {max_workers() + 1}: at most {max_workers()}"):
        _check_workers(CheckOptions(workers=str(max_workers() + 1)))


def test_plain_pytest_junit_on_a_full_disk_is_one_line(
    capsys: pytest.CaptureFixture[str], no_replace: None
) -> None:
    from sessionstate.conformance._harness.run_results import write_junit

    write_junit("/dev/full", results())
    err = capsys.readouterr().err
    assert err == (
        "sessionstate: error: --sessionstate-junitxml '/dev/full' could not be written: "
        "No space left on device\n"
    )


def test_unmatched_expectations_under_the_table_are_bounded() -> None:
    many = results()
    many["unmatched_expectations"] = [f"test_x{i} (line {i})" for i in range(200_000)]
    lines = terminal.table_lines(many)
    warnings = [line for line in lines if line.startswith("warning: expectation")]
    assert len(warnings) == terminal.UNMATCHED_LINES
    assert f"... and {200_000 - terminal.UNMATCHED_LINES:,} more expectations" in lines[-2]
    assert lines[-1].startswith("verdict: ")
