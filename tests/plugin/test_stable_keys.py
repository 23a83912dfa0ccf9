"""Derandomized profiles draw the same examples wherever the run starts and wherever the
suite is installed (``_harness/stable_keys.py``).

Hypothesis keys a parametrized test's derandomized seed by its node id, which pytest roots at
the run's rootdir: before the suite re-keyed them, ``sessionstate check`` from two folders of
one machine drew different MAX_SESSIONS values, and a zoo subject was caught in one checkout
and missed in another of the same commit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import sessionstate.conformance.suite as suite_package
from sessionstate.conformance._harness.stable_keys import StableKeys

RECORDER = """
import json, os
from sessionstate.conformance import Subject
from sessionstate.reference import resolve_session_state_config

def resolver(*, enable, max_sessions):
    drawn = [repr(enable), repr(max_sessions), repr(dict(sorted(
        (k, v) for k, v in os.environ.items() if k.startswith("OMNI_DIFFUSION_"))))]
    with open(os.environ["DRAWS_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps(drawn) + "\\n")
    return resolve_session_state_config(enable=enable, max_sessions=max_sessions)

subject = Subject(name="recorder", config_resolver=resolver)
"""


def _draws(tmp_path: Path, rootdir: Path, name: str) -> list[str]:
    draws = tmp_path / f"{name}.jsonl"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTATE_")}
    environ.update(PYTHONPATH=str(tmp_path / "lib"), DRAWS_FILE=str(draws))
    done = subprocess.run(
        [sys.executable, "-m", "sessionstate", "check", "recorder:subject", "--clause", "ENV-3",
         "--profile", "quick", "--", f"--rootdir={rootdir}"],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return draws.read_text(encoding="utf-8").splitlines()


def test_the_same_examples_from_any_rootdir(tmp_path: Path) -> None:
    """ENV-3's parametrized property calls the resolver with the same values in the same
    order whether pytest's rootdir is the folder above the suite or two folders higher:
    pytest roots the node ids at either (``suite/test_env.py::...``,
    ``sessionstate/conformance/suite/test_env.py::...``), as it roots an installed suite's at
    whatever ancestor of the run's folder holds the package."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "recorder.py").write_text(RECORDER, encoding="utf-8")
    suite = Path(suite_package.__file__).resolve().parent
    near = _draws(tmp_path, suite.parents[0], "near")
    far = _draws(tmp_path, suite.parents[2], "far")
    assert len(near) > 20, near
    assert near == far


def test_a_digest_keyed_by_an_installed_path_is_rooted_at_the_suite(tmp_path: Path) -> None:
    """The digest Hypothesis' plugin set from a node id rooted far from the suite (an
    installed copy, a run started elsewhere) becomes the suite-rooted one; a test outside
    the suite folder, and a test Hypothesis did not key, are left as they are."""
    suite = tmp_path / "site-packages" / "sessionstate" / "conformance" / "suite"
    suite.mkdir(parents=True)

    def item(path: Path, nodeid: str, digest: bytes | None) -> SimpleNamespace:
        inner = SimpleNamespace() if digest is None else SimpleNamespace(
            _hypothesis_internal_add_digest=digest
        )  # fmt: skip
        test = SimpleNamespace(hypothesis=SimpleNamespace(inner_test=inner))
        return SimpleNamespace(path=path, nodeid=nodeid, obj=test)

    far = "../../venv/lib/python3.11/site-packages/sessionstate/conformance/suite/test_env.py"
    keyed = item(suite / "test_env.py", f"{far}::t[ENV-4]", f"{far}::t[ENV-4]".encode())
    outside = item(tmp_path / "test_mine.py", "test_mine.py::t[x]", b"test_mine.py::t[x]")
    unkeyed = item(suite / "test_env.py", f"{far}::u", None)
    plugin = StableKeys(suite.resolve())
    for each in (keyed, outside, unkeyed):
        plugin.pytest_runtest_call(each)  # type: ignore[arg-type]
    assert (
        keyed.obj.hypothesis.inner_test._hypothesis_internal_add_digest == b"test_env.py::t[ENV-4]"
    )
    assert (
        outside.obj.hypothesis.inner_test._hypothesis_internal_add_digest == b"test_mine.py::t[x]"
    )
    assert not hasattr(unkeyed.obj.hypothesis.inner_test, "_hypothesis_internal_add_digest")
