"""cosmic-ray's test command: run the conformance suite ALONE against the mutated reference.

cosmic-ray mutates one file of reference/ in place per mutant; this finds which
one (git sees it as modified) and runs only the clause groups that specify that
module's behaviour, with the derandomized ``mutation`` profile, stopping at the
first failure. Exit status 0 means the mutant survived.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Which clause groups specify each reference module.
GROUPS = {
    "accounting.py": ["ACCT", "STATS", "OBJ"],
    "attrs.py": ["ADAPT"],
    "base.py": ["OBJ", "RESET"],
    "config.py": ["ENV"],
    "errors.py": ["ADMIT"],
    "manager.py": ["KEY", "LRU", "DROP", "STATS", "LOCK", "ADMIT", "ACCT"],
    "objects.py": ["OBJ", "ADAPT"],
    "session.py": ["RESET", "ACCT", "DROP"],
    "__init__.py": [],
}


def mutated_modules() -> list[str]:
    out = subprocess.run(
        ["git", "diff", "--name-only", "--", "reference/"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout  # fmt: skip
    return [Path(line).name for line in out.split()]


def main() -> int:
    modules = mutated_modules()
    groups = sorted({g for m in modules for g in GROUPS.get(m, [])}) if modules else []
    args = [
        sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--pyargs", "sessionstate.conformance.suite", "--sessionstate-profile", "mutation",
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
    ]  # fmt: skip
    for group in groups:
        args += ["--sessionstate-clause", group]
    return subprocess.run(args, cwd=ROOT / "bench", check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
