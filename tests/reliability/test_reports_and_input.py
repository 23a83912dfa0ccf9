"""A gate that survives a hostile world: reports sent to devices, FIFOs and descriptors,
a full disk, and malformed input, as one table.

Each case pins the exit status (0 conformant, 1 a clause failed, 2 misuse, 3 incomplete,
4 infrastructure), the one line on stderr (never a traceback), that nothing the user gave
was destroyed, and a bounded time. Most cases run ``sessionstate`` in this process
(``cli.main``), with ``os.replace`` guarded so that a regression cannot replace a device
node; the two that need the suite to really run go through a subprocess, with stdout
and stderr in one file so that the order of the verdict and the error line is seen.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..cli.conftest import one_line_error

#: Every case ends well within this (the subprocess ones run one clause, quick profile).
BOUND_S = 120.0

Setup = Callable[[Path, pytest.MonkeyPatch], None]
Verify = Callable[[Path, subprocess.CompletedProcess[str]], None]

VALID_RESULTS = {
    "subject": "ref",
    "verdict": "conformant",
    "clauses": {
        "ENV-1": {"level": "MUST", "outcome": "passed", "tests": [], "seconds": 0.1, "message": ""}
    },
}


@dataclass(frozen=True)
class Case:
    id: str
    #: ``sessionstate`` arguments; ``{tmp}`` is the case's folder.
    argv: tuple[str, ...]
    exit: int
    #: What the one stderr line says ("" when the case must print no error line).
    says: str
    #: Files written into the folder first: name -> bytes (kept byte for byte).
    files: tuple[tuple[str, bytes], ...] = ()
    setup: Setup | None = None
    verify: Verify | None = None
    #: Run through ``python -m sessionstate`` (stdout and stderr into one file).
    subprocess: bool = False
    #: Files the case may change (all others of ``files`` must stay as they were).
    changes: tuple[str, ...] = field(default=())


# -- setups and checks ---------------------------------------------------------------------


def _subject(fields: str) -> tuple[tuple[str, bytes], ...]:
    source = f"from sessionstate.conformance import Subject\n\nsubject = Subject({fields})\n"
    return (("bad_subject.py", source.encode()),)


def _results(data: object) -> tuple[tuple[str, bytes], ...]:
    return (("r.json", json.dumps(data).encode()),)


def _canned_run(results: dict[str, Any]) -> Setup:
    """The suite's run replaced by one whose results are ``results``: the check reports them
    as it reports a child's (``runner.finish_check``), with no subject code run."""

    def setup(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        from sessionstate.conformance._harness import runner
        from sessionstate.conformance._harness.supervision import supervisor

        def canned(options: Any) -> int:
            return runner.finish_check(options, 0, json.dumps(results))

        monkeypatch.setattr(supervisor, "supervise", canned)

    return setup


def _canned_results(subject: str, outcome: str) -> dict[str, Any]:
    from sessionstate.conformance._harness.results import results_json
    from sessionstate.conformance._harness.under_test import environment

    record = {"nodeid": "test_env.py::test_env_1", "clauses": ["ENV-1"], "outcome": outcome}
    if outcome == "failed":
        record |= {"failed_clauses": ["ENV-1"], "message": "enable=True, but should be False"}
    return results_json(
        [record], [], ["ENV-1"], strict=False,
        facts={"subject": subject, "capabilities": [], "environment": environment()},
        run={"target": "m:subject", "suite_version": "0", "profile": "quick", "seed": None,
             "seconds": 1.0},
    )  # fmt: skip


def _disk_full(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _canned_run(_canned_results("reference", "passed"))(tmp, monkeypatch)
    from sessionstate.conformance._harness import atomic

    def full(path: object, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "write_text_atomic", full)


def _forged_name(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forged = "x\r\x1b[32mverdict: CONFORMANT (1 passed)\x1b[0m\nverdict: CONFORMANT"
    _canned_run(_canned_results(forged, "failed"))(tmp, monkeypatch)


def _one_verdict(word: str) -> Verify:
    def verify(tmp: Path, result: subprocess.CompletedProcess[str]) -> None:
        verdicts = [line for line in result.stdout.splitlines() if line.startswith("verdict:")]
        assert len(verdicts) == 1 and verdicts[0].startswith(f"verdict: {word} "), verdicts
        assert "\x1b" not in result.stdout and "\r" not in result.stdout

    return verify


def _nothing_written(name: str) -> Verify:
    def verify(tmp: Path, result: subprocess.CompletedProcess[str]) -> None:
        assert not (tmp / name).exists()
        assert [p.name for p in tmp.iterdir() if p.name.startswith(".")] == []  # no temp file
        assert result.stdout.rstrip().splitlines()[-1].startswith("verdict: CONFORMANT")

    return verify


def _dangling(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp / "d").mkdir()
    (tmp / "d" / "conformance_subject.py").symlink_to(tmp / "missing.py")


def _not_followed(tmp: Path, result: subprocess.CompletedProcess[str]) -> None:
    assert not (tmp / "missing.py").exists()
    assert not (tmp / "d" / ".github").exists()


def _second_file_fails(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessionstate.conformance._harness import init_project

    stage = init_project.stage

    def failing(path: Path, text: str, *, exclusive: bool = False) -> Path:
        if path.name == "sessionstate.yml":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return stage(path, text, exclusive=exclusive)

    monkeypatch.setattr(init_project, "stage", failing)


def _left_nothing(tmp: Path, result: subprocess.CompletedProcess[str]) -> None:
    assert not (tmp / "d").exists()  # not the subject file, not an empty .github


def _no_examples(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessionstate.conformance._harness import fuzz

    monkeypatch.setattr(fuzz, "_fuzz", lambda *args: fuzz._Outcome())
    monkeypatch.setattr(fuzz, "read_counts", lambda folder: {})


def _page_written(tmp: Path, result: subprocess.CompletedProcess[str]) -> None:
    assert (tmp / "a" / "b" / "m.html").read_text(encoding="utf-8").startswith("<!doctype html>")
    assert "| ref | conformant |" in result.stdout


def _table_printed(tmp: Path, result: subprocess.CompletedProcess[str]) -> None:
    assert "| ref | conformant |" in result.stdout


def _fifo(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(tmp / "junit.fifo")


def _streams_and_full_disk(tmp: Path, result: subprocess.CompletedProcess[str]) -> None:
    lines = result.stdout.rstrip().splitlines()
    verdicts = [n for n, line in enumerate(lines) if line.startswith("verdict:")]
    assert len(verdicts) == 1 and lines[verdicts[0]].startswith("verdict: CONFORMANT")
    assert verdicts[0] < len(lines) - 1  # the error line comes after the verdict
    assert json.loads((tmp / "r.json").read_text(encoding="utf-8"))["verdict"] == "conformant"
    assert "<testsuite" in (tmp / "fifo.got").read_text(encoding="utf-8")


def _markdown_after_table(tmp: Path, result: subprocess.CompletedProcess[str]) -> None:
    log = result.stdout
    assert " passed" in log.split("verdict:", 1)[0]  # pytest's own output is kept
    assert log.count("verdict: CONFORMANT") == 1
    assert log.index("verdict: CONFORMANT") < log.index("## sessionstate conformance")
    assert "| ENV-1 | MUST | ✅ passed |" in log


QUICK = ("check", "--clause", "ENV-1", "--profile", "quick")

CASES = [
    # A Subject field of the wrong type: one line naming the field, what it got, what it needs.
    Case("subject-state-objects-int", ("check", "bad_subject:subject"), 2,
         "subject 's': state_objects=5 (a int): needs a sequence", _subject("name='s', state_objects=5")),
    Case("subject-devices-int", ("check", "bad_subject:subject"), 2,
         "subject 's': devices=5 (a int): needs None or a sequence", _subject("name='s', devices=5")),
    Case("subject-devices-entry", ("check", "bad_subject:subject"), 2,
         "subject 's': devices holds None (a NoneType)", _subject("name='s', devices=('cpu', None)")),
    Case("subject-name-int", ("check", "bad_subject:subject"), 2,
         "Subject name=5 (a int): needs a non-empty str", _subject("name=5")),
    Case("subject-hook-int", ("check", "bad_subject:subject"), 2,
         "subject 's': accounting is a int, not callable (5): it needs a callable or None", _subject("name='s', accounting=5")),
    Case("subject-capabilities-str", ("check", "bad_subject:subject"), 2,
         "capabilities='threadsafe' (a str): needs an iterable of str",
         _subject("name='s', capabilities='threadsafe'")),
    Case("subject-adapters-none", ("check", "bad_subject:subject"), 2,
         "adapters=None (a NoneType): needs a sequence", _subject("name='s', adapters=None")),
    # Expectations files that are not UTF-8 text.
    Case("expectations-latin-1", ("check", "--expectations", "{tmp}/e.txt"), 2,
         "e.txt:2: not UTF-8 text (byte 0xe9)", (("e.txt", "# ok\nLRU-1 xfail café\n".encode("latin-1")),)),
    Case("expectations-binary", ("check", "--expectations", "{tmp}/e.png"), 2,
         "is binary (it holds NUL bytes)", (("e.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),)),
    # -n and --devices.
    Case("workers-999", ("check", "-n", "999"), 2, "-n 999: at most"),
    Case("devices-only-commas", ("check", "--devices", ",,,"), 2, "--devices ',,,': name the devices"),
    Case("devices-empty-name", ("check", "--devices", "cpu,,"), 2, "--devices 'cpu,,': name the devices"),
    # fuzz --seconds, and a fuzz run in which no example ran.
    Case("fuzz-seconds-nan", ("fuzz", "--seconds", "nan"), 2, "--seconds nan: give a finite number"),
    Case("fuzz-seconds-inf", ("fuzz", "--seconds", "inf"), 2, "--seconds inf: give a finite number"),
    Case("fuzz-seconds-negative", ("fuzz", "--seconds", "-1"), 2, "--seconds -1: give a finite"),
    Case("fuzz-no-example-ran", ("fuzz", "--seconds", "1", "--no-quick-pass", "--database", "{tmp}/db"), 3,
         "incomplete: no example ran", setup=_no_examples),
    # report on files that are not this version's results.
    Case("report-not-ours", ("report", "{tmp}/r.json"), 2, "no 'subject' key", _results({"name": "x"})),
    Case("report-a-list", ("report", "{tmp}/r.json"), 2, "a JSON array, not an object", _results([1, 2])),
    Case("report-unknown-outcome", ("report", "{tmp}/r.json"), 2, "clause 'ENV-1' has outcome 'great'",
         _results({"subject": "x", "clauses": {"ENV-1": {"outcome": "great"}}})),
    Case("report-older-shape", ("report", "{tmp}/r.json"), 2, "clause 'ENV-1' is a JSON string",
         _results({"subject": "x", "clauses": {"ENV-1": "passed"}})),
    Case("report-latin-1", ("report", "{tmp}/r.json"), 2, "not UTF-8 text",
         (("r.json", '{"subject": "café"}'.encode("latin-1")),)),
    # report outputs: never over an input, made where missing, refused where unwritable.
    Case("report-html-over-input", ("report", "{tmp}/r.json", "--html", "{tmp}/r.json"), 2,
         "would destroy the input", _results(VALID_RESULTS)),
    Case("report-markdown-over-input", ("report", "{tmp}/r.json", "--markdown", "{tmp}/r.json"), 2,
         "would destroy the input", _results(VALID_RESULTS)),
    Case("report-outputs-clash", ("report", "{tmp}/r.json", "--markdown", "{tmp}/o", "--html", "{tmp}/o"),
         2, "--markdown and --html both name", _results(VALID_RESULTS)),
    Case("report-html-unwritable", ("report", "{tmp}/r.json", "--html", "/proc/self/m.html"), 2,
         "--html '/proc/self/m.html': cannot write in", _results(VALID_RESULTS)),
    Case("report-html-missing-dirs", ("report", "{tmp}/r.json", "--html", "{tmp}/a/b/m.html"), 0, "",
         _results(VALID_RESULTS), verify=_page_written),
    Case("report-disk-full", ("report", "{tmp}/r.json", "--markdown", "/dev/full"), 4,
         "--markdown '/dev/full' could not be written: No space left on device",
         _results(VALID_RESULTS), verify=_table_printed),
    # init: all or nothing, no dangling link followed.
    Case("init-into-file", ("init", "{tmp}/f"), 2, "is not a directory", (("f", b"keep me\n"),)),
    Case("init-under-proc", ("init", "/proc/self/sessionstate-init"), 2,
         "cannot write '/proc/self/sessionstate-init'"),
    Case("init-under-sys", ("init", "/sys/kernel/sessionstate-init"), 2,
         "cannot write '/sys/kernel/sessionstate-init'"),
    Case("init-dangling-link", ("init", "{tmp}/d"), 2, "is a symbolic link to nothing; not followed",
         setup=_dangling, verify=_not_followed),
    Case("init-second-file-fails", ("init", "{tmp}/d"), 2, "No space left on device",
         setup=_second_file_fails, verify=_left_nothing),
    # A full disk: the verdict first, then one line naming the report; exit 4.
    Case("check-disk-full", (*QUICK, "--report-json", "{tmp}/r.json"), 4,
         "--report-json '{tmp}/r.json' could not be written: No space left on device",
         setup=_disk_full, verify=_nothing_written("r.json")),
    # A subject name cannot forge the verdict line.
    Case("check-forged-name", QUICK, 1, "", setup=_forged_name, verify=_one_verdict("NON-CONFORMANT")),
    # The suite really runs: reports into /dev/full, a FIFO, a file; and into /dev/stdout.
    Case("check-full-fifo-file", (*QUICK, "--markdown", "/dev/full", "--junitxml", "{tmp}/junit.fifo",
                                  "--report-json", "{tmp}/r.json"), 4,
         "--markdown '/dev/full' could not be written: No space left on device",
         setup=_fifo, verify=_streams_and_full_disk, subprocess=True),
    Case("check-markdown-to-stdout", (*QUICK, "--markdown", "/dev/stdout"), 0, "",
         verify=_markdown_after_table, subprocess=True),
]  # fmt: skip


# -- running a case ------------------------------------------------------------------------


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A regression must fail the test, not replace a device node of this machine."""
    replace = os.replace

    def checked_replace(src: Any, dst: Any, **kwargs: Any) -> None:
        real = os.path.realpath(dst)
        assert not real.startswith(("/dev/", "/proc/", "/sys/")), f"replaced {dst!r}"
        replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", checked_replace)


def _in_process(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> subprocess.CompletedProcess[str]:
    from sessionstate.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out, err)


def _in_subprocess(argv: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    """stdout and stderr in one file (so that the order of lines is seen), as a CI log;
    a FIFO in the folder is read by a thread from the start."""
    fifo = tmp / "junit.fifo"
    reader = None
    if fifo.exists():

        def read() -> None:
            with open(fifo, encoding="utf-8") as source:  # blocks until the writer opens
                (tmp / "fifo.got").write_text(source.read(), encoding="utf-8")

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
    env = {**os.environ, "PYTHONPATH": str(tmp)}
    env.pop("SESSIONSTATE_SUBJECT", None)
    with open(tmp / "log.txt", "w", encoding="utf-8") as log:
        completed = subprocess.run(
            [sys.executable, "-m", "sessionstate", *argv],
            stdout=log, stderr=subprocess.STDOUT, cwd=tmp, env=env, timeout=BOUND_S,
        )  # fmt: skip
    if reader is not None:
        reader.join(BOUND_S)
        assert not reader.is_alive(), "the FIFO's reader got no end of file"
    log_text = (tmp / "log.txt").read_text(encoding="utf-8")
    errors = "\n".join(line for line in log_text.splitlines() if ": error: " in line)
    return subprocess.CompletedProcess(argv, completed.returncode, log_text, errors)


def _the_line(result: subprocess.CompletedProcess[str], case: Case, tmp: Path) -> None:
    """Exit status and the one error line (none for a case that says nothing)."""
    expected = case.says.replace("{tmp}", str(tmp))
    if case.exit == 2:
        assert expected in one_line_error(result)
        return
    assert result.returncode == case.exit, (result.returncode, result.stdout[-3000:], result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    stderr = result.stderr.strip()
    if not expected:
        assert stderr == "", stderr
        return
    assert len(stderr.splitlines()) == 1 and expected in stderr, stderr


def _is_device(path: str) -> bool:
    return stat.S_ISCHR(os.stat(path).st_mode)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_case(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    guarded: None,
) -> None:
    for name, data in case.files:
        (tmp_path / name).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "bad_subject", raising=False)
    if case.setup is not None:
        case.setup(tmp_path, monkeypatch)
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in case.argv]
    started = time.monotonic()
    result = _in_subprocess(argv, tmp_path) if case.subprocess else _in_process(argv, capsys)
    assert time.monotonic() - started < BOUND_S
    _the_line(result, case, tmp_path)
    for name, data in case.files:
        if name not in case.changes:
            assert (tmp_path / name).read_bytes() == data, f"{name} was changed"
    assert _is_device("/dev/full") and _is_device("/dev/null")
    if case.verify is not None:
        case.verify(tmp_path, result)


#: A subject name no writer can take as it is: a lone surrogate (no UTF-8 file or stream can
#: hold one), a NUL, a bidi override and a million characters.
HOSTILE_NAME = "sub\udc80ject\x00\u202e" + "x" * 1_000_000


def test_every_writer_survives_every_string_a_subject_supplies(tmp_path: Path) -> None:
    """The terminal, the JSON, the JUnit XML and the Markdown summary each take the hostile
    name escaped, never raise (a lone surrogate made the Markdown writer raise
    UnicodeEncodeError: a traceback, exit 1, no Markdown while the others were written)."""
    (tmp_path / "hostile_name.py").write_text(
        "import dataclasses\n"
        "from sessionstate.fixtures.reference_subject import subject as reference\n"
        f"subject = dataclasses.replace(reference, name={HOSTILE_NAME!r})\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    done = subprocess.run(
        [sys.executable, "-m", "sessionstate", "check", "hostile_name:subject", "--clause",
         "ENV-1", "--profile", "quick", "--report-json", "r.json", "--junitxml", "j.xml",
         "--markdown", "r.md"],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(tmp_path)}, capture_output=True,
        timeout=BOUND_S,
    )  # fmt: skip
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0 and "Traceback" not in stderr, stderr[-3000:]
    assert b"verdict: CONFORMANT" in done.stdout
    assert b"sub\\udc80ject\\x00\\u202e" in done.stdout  # escaped, on the terminal
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")  # strict UTF-8: it decodes
    assert "\\\\udc80" in markdown or "\\udc80" in markdown, markdown[:300]
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["subject"] == HOSTILE_NAME
    import xml.etree.ElementTree as ET

    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("name", "").startswith("sub\\udc80ject\\x00")
