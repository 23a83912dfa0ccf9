"""The dependency floors: declared once (``compat.FLOORS``), the same in pyproject.toml, and
an installed release older than one is a usage error naming it, never a clause failure.

The floors themselves are run in CI: ``nox -s lowest`` installs exactly them (``nox -s
newest`` the newest releases) and runs the suite on the reference and a zoo subject.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from sessionstate import cli
from sessionstate.conformance._harness import compat

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> dict[str, str]:
    """pyproject's runtime dependencies: name -> the version after ``>=``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floors = {}
    for requirement in project["dependencies"]:
        name, _, version = requirement.partition(">=")
        assert version, f"{requirement!r} has no floor: every dependency declares its oldest"
        floors[name.strip()] = version.strip()
    return floors


def test_pyproject_declares_the_floors_the_suite_checks() -> None:
    declared = _declared()
    assert {f.distribution: f.version for f in compat.FLOORS} == {
        name: version for name, version in declared.items() if name != "torch"
    }
    assert declared["torch"] == "2.13"  # the release `nox -s lowest` holds (see noxfile)


def test_the_installed_releases_are_supported() -> None:
    assert compat.unsupported() is None


@pytest.mark.parametrize(
    ("installed", "floor", "older"),
    [
        ("6.138.14", "6.138.15", True),
        ("6.138.15", "6.138.15", False),
        ("6.90.0", "6.138.15", True),
        ("7", "7.0", False),
        ("3.1.0", "3.2.0", True),
        ("3.10.0", "3.2.0", False),  # numeric, not text, comparison
        ("8.0.0rc1", "8.0.1", True),
        ("2.0.0.dev0+abc", "1.23.2", False),
    ],
)
def test_releases_compare_by_number(installed: str, floor: str, older: bool) -> None:
    assert compat._older(installed, floor) is older


@pytest.fixture
def hypothesis_too_old(monkeypatch: pytest.MonkeyPatch) -> str:
    """The floors as if the installed Hypothesis were older than the suite needs."""
    floor = compat.Floor("hypothesis", "999.0", "a feature from the future")
    monkeypatch.setattr(compat, "FLOORS", (floor, *compat.FLOORS[1:]))
    return "the suite needs hypothesis>=999.0 (a feature from the future)"


@pytest.mark.parametrize("command", ["check", "fuzz"])
def test_an_old_release_is_one_line_exit_2(
    command: str, hypothesis_too_old: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([command]) == cli.EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"sessionstate {command}: error: hypothesis ")
    assert hypothesis_too_old in err


def test_an_old_release_stops_the_plain_pytest_route_before_collection(
    hypothesis_too_old: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = pytest.main(
        ["--pyargs", "sessionstate.conformance.suite", "-p", "no:cacheprovider", "-q"]
    )
    assert code == pytest.ExitCode.USAGE_ERROR
    out, err = capsys.readouterr()
    assert hypothesis_too_old in err and "passed" not in out and "CONFORMANT" not in out
