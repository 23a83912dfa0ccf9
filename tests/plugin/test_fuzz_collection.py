"""Every property of the suite is a Hypothesis test that HypoFuzz collects as it is.

A property run inside a plain test function (a nested ``@given``, a machine run by
``run_state_machine_as_test``, a ``random.Random`` loop) is invisible to ``hypothesis
fuzz`` and cannot be shrunk or replayed from a database; a per-test database or
``derandomize`` makes HypoFuzz refuse the test. The static check finds the first kind
in the suite's source; the collection check asks HypoFuzz itself.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parents[2] / "conformance" / "suite"

#: Hypothesis tests in the suite, as HypoFuzz collects them under the deep profile against
#: the reference (parametrized cases count one each). Update it with the suite, from the
#: "fuzz targets" line this test prints on failure.
EXPECTED_TARGETS = 74


def _nested_properties(path: Path) -> list[str]:
    """``@given`` functions and property runners inside another function of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for outer in ast.walk(tree):
        if not isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(outer):
            if node is outer:
                continue
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                "given" in ast.unparse(d) for d in node.decorator_list
            ):
                found.append(f"{path.name}:{node.lineno} @given {node.name} inside {outer.name}")
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in (
                "run_state_machine_as_test",
                "run_machine",
                "Random",
            ):
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node.func)} in {outer.name}")
    return found


@pytest.mark.parametrize("path", sorted(SUITE.glob("test_*.py")), ids=lambda p: p.name)
def test_no_property_hides_inside_a_plain_test(path: Path) -> None:
    assert _nested_properties(path) == []


def test_per_test_settings_leave_database_and_search_to_the_profile() -> None:
    """A test's own ``@settings`` may not pick a database, derandomize or phases (HypoFuzz
    refuses a test whose database is not the profile's), and may scale the number of
    examples only from the profile's own (``settings.default``)."""
    found = []
    for path in sorted(SUITE.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("settings")):
                continue
            for keyword in node.keywords:
                value = ast.unparse(keyword.value)
                if keyword.arg in ("database", "derandomize", "phases") or (
                    keyword.arg == "max_examples" and "settings.default" not in value
                ):
                    found.append(f"{path.name}:{node.lineno} {keyword.arg}={value}")
    assert found == []


_COLLECT = """
import json, sys
from hypofuzz.collection import collect_tests
result = collect_tests(["-p", "no:cacheprovider", "--pyargs", "sessionstate.conformance.suite",
                        "--sessionstate-profile", "deep"])
print(json.dumps({"targets": [t.nodeid for t in result.fuzz_targets],
                  "not_collected": {k: v["status_reason"] for k, v in result.not_collected.items()}}))
"""


def test_hypofuzz_collects_every_property(tmp_path: Path) -> None:
    """``hypothesis fuzz -- --pyargs sessionstate.conformance.suite`` fuzzes every Hypothesis
    test of the suite, and refuses none."""
    pytest.importorskip("hypofuzz", reason="HypoFuzz is in the [fuzz] and [test] extras")
    done = subprocess.run(
        [sys.executable, "-c", _COLLECT],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["not_collected"] == {}
    print(f"fuzz targets: {len(result['targets'])}")
    assert len(result["targets"]) == EXPECTED_TARGETS, "\n".join(result["targets"])
