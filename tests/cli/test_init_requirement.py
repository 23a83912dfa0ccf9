"""``init`` fills SESSIONSTATE_REQUIREMENT from how sessionstate was installed (PEP 610)."""

from __future__ import annotations

import json

import pytest
import yaml

from sessionstate.conformance._harness.init_project import workflow_text
from sessionstate.conformance._harness.requirement import (
    InstallSource,
    install_source,
    source_from_direct_url,
)

GIT = {
    "url": "https://github.com/acme/sessionstate",
    "vcs_info": {"vcs": "git", "commit_id": "0123abcd", "requested_revision": "v0.1.0"},
}


@pytest.mark.parametrize(
    ("direct_url", "requirement", "reachable"),
    [
        (None, "sessionstate==0.1.0", True),
        (GIT, "sessionstate @ git+https://github.com/acme/sessionstate@0123abcd", True),
        (
            {**GIT, "subdirectory": "python"},
            "sessionstate @ git+https://github.com/acme/sessionstate@0123abcd#subdirectory=python",
            True,
        ),
        (
            {"url": "https://example.org/sessionstate-0.1.0-py3-none-any.whl", "archive_info": {}},
            "sessionstate @ https://example.org/sessionstate-0.1.0-py3-none-any.whl",
            True,
        ),
        (
            {"url": "file:///wheels/sessionstate-0.1.0-py3-none-any.whl", "archive_info": {}},
            "sessionstate @ file:///wheels/sessionstate-0.1.0-py3-none-any.whl",
            False,
        ),
        ({"url": "file:///src/ss", "dir_info": {}}, "sessionstate @ file:///src/ss", False),
        (
            {"url": "file:///src/ss", "dir_info": {"editable": True}},
            "sessionstate @ file:///src/ss",
            False,
        ),
    ],
    ids=["index", "git", "git-subdirectory", "remote-wheel", "local-wheel", "dir", "editable"],
)
def test_each_install_kind_gives_its_requirement(
    direct_url: dict[str, object] | None, requirement: str, reachable: bool
) -> None:
    text = None if direct_url is None else json.dumps(direct_url)
    source = source_from_direct_url(text, "0.1.0")
    assert (source.requirement, source.reachable) == (requirement, reachable)
    assert bool(source.note) is not reachable  # a local path always says what to do


@pytest.mark.parametrize("text", ["not json", "[]", '{"url": 5}'])
def test_a_malformed_file_reads_as_no_file(text: str) -> None:
    assert source_from_direct_url(text, "0.1.0").requirement == "sessionstate==0.1.0"


def test_this_environment_is_a_local_directory() -> None:
    """The project's tests run on the tree installed from its directory (nox installs
    ``.``, developers ``-e .``): a ``file://`` URL a runner cannot reach."""
    source = install_source()
    assert source.requirement.startswith("sessionstate @ file:///"), source
    assert not source.reachable


@pytest.mark.parametrize(
    "requirement",
    [
        "sessionstate @ git+https://github.com/acme/sessionstate@0123abcd",
        "sessionstate @ file:///a path/with 'quotes' and: colons",
    ],
)
def test_the_workflow_carries_the_requirement_as_one_value(requirement: str) -> None:
    text = workflow_text(InstallSource(requirement, "a test", True), "0.1.0")
    job = yaml.safe_load(text)["jobs"]["conformance"]
    assert job["env"]["SESSIONSTATE_REQUIREMENT"] == requirement
    assert "(a test)" in text


def test_init_says_what_it_wrote_and_why(run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """stdout names the requirement, where it came from, and, for a local path, what to
    set instead; the workflow holds the same requirement."""
    init = run_cli("init")
    assert init.returncode == 0, init.stderr
    lines = init.stdout.splitlines()
    source = install_source()
    said = f"SESSIONSTATE_REQUIREMENT: {source.requirement} (this sessionstate is {source.how})"
    assert said in lines
    assert f"  edit it in the workflow: {source.note}" in lines
    workflow = yaml.safe_load((tmp_path / ".github/workflows/sessionstate.yml").read_text())
    assert workflow["jobs"]["conformance"]["env"]["SESSIONSTATE_REQUIREMENT"] == source.requirement
