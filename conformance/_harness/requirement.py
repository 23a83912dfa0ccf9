"""Where this sessionstate came from, as the pip requirement a CI job installs it by.

``sessionstate init`` writes it into the workflow's ``SESSIONSTATE_REQUIREMENT``. The
source is read from the installed distribution's PEP 610 ``direct_url.json``
(``importlib.metadata``): pip writes it for every install that did not come from an
index, and none for one that did.

* a VCS install (``pip install git+https://...``) is pinned to the commit pip checked
  out: ``sessionstate @ git+https://host/repo@<commit>``, reachable from any runner;
* an archive at a remote URL is named by that URL;
* a local wheel, sdist or directory (a checkout, editable or not) is a ``file://`` URL
  that names this machine's disk: no runner can reach it, which ``note`` says, and
  the workflow's install step refuses it with a line naming what to set instead;
* an install from an index (no ``direct_url.json``) is ``sessionstate==<version>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import metadata
from urllib.parse import urlsplit

__all__ = ["InstallSource", "install_source", "source_from_direct_url"]

_DIST = "sessionstate"


@dataclass(frozen=True)
class InstallSource:
    """A pip requirement for this sessionstate, and how it was found.

    ``requirement`` is what ``pip install`` takes; ``how`` names the kind of install
    (one short phrase); ``reachable`` is False where the requirement names this
    machine's disk, which a CI runner cannot read; ``note`` says what to do then.
    """

    requirement: str
    how: str
    reachable: bool
    note: str = ""


_LOCAL_NOTE = (
    "a CI runner cannot reach a path on this machine: set SESSIONSTATE_REQUIREMENT to "
    "a git URL (sessionstate @ git+https://HOST/REPO@COMMIT) or to a wheel committed "
    "to your repository (./ci/sessionstate-VERSION-py3-none-any.whl)"
)


def source_from_direct_url(text: str | None, version: str) -> InstallSource:
    """The requirement that ``direct_url.json`` (``text``; None where there is none)
    describes for sessionstate ``version``. A file that is not the JSON PEP 610
    describes is read as no file: the requirement is then the released version."""
    released = InstallSource(f"{_DIST}=={version}", "from a package index", True)
    if text is None:
        return released
    try:
        info = json.loads(text)
    except ValueError:
        return released
    if not isinstance(info, dict) or not isinstance(info.get("url"), str):
        return released
    url: str = info["url"]
    subdirectory = info.get("subdirectory")
    fragment = f"#subdirectory={subdirectory}" if isinstance(subdirectory, str) else ""
    vcs = info.get("vcs_info")
    local = urlsplit(url).scheme == "file"
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        commit = vcs.get("commit_id")
        at = f"@{commit}" if isinstance(commit, str) else ""
        requirement = f"{_DIST} @ {vcs['vcs']}+{url}{at}{fragment}"
        how = f"a {vcs['vcs']} repository" + (f" at commit {commit}" if at else "")
    elif isinstance(info.get("dir_info"), dict):
        editable = info["dir_info"].get("editable") is True
        requirement = f"{_DIST} @ {url}{fragment}"
        how = ("an editable install of " if editable else "") + "a local directory"
        local = True  # a directory is always this machine's, whatever its URL says
    else:
        requirement = f"{_DIST} @ {url}{fragment}"
        how = "a local archive" if local else "an archive URL"
    return InstallSource(requirement, how, not local, _LOCAL_NOTE if local else "")


def install_source() -> InstallSource:
    """Where the installed sessionstate came from (see the module docstring)."""
    try:
        distribution = metadata.distribution(_DIST)
    except metadata.PackageNotFoundError:  # imported from a source tree, never installed
        from sessionstate import __version__

        return InstallSource(f"{_DIST}=={__version__}", "a source tree", False, _LOCAL_NOTE)
    return source_from_direct_url(distribution.read_text("direct_url.json"), distribution.version)
