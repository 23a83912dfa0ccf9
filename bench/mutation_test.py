"""cosmic-ray's test command: run the conformance suite ALONE against the mutated reference.

cosmic-ray mutates one file of reference/ in place per mutant; this finds which
one (git sees it as modified) and runs only the clause groups that specify that
module's behaviour, with the derandomized ``mutation`` profile, stopping at the
first failure; where the reference subject has no object that reaches the mutated code
(``EXAMPLES``), the worked example that does runs next. Exit status 0 means the mutant
survived. ``sessionstate`` is imported
from the tree this file lies in (``tree_import``), so parallel workers, each in its
own copy of the tree, each test their own mutant.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: Runs pytest with ``sessionstate`` imported from ROOT, and says so if it was not.
BOOTSTRAP = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(HERE)!r})
import tree_import
tree_import.install(Path({str(ROOT)!r}))
import pytest
import sessionstate.reference
if not Path(sessionstate.reference.__file__).is_relative_to({str(ROOT)!r}):
    sys.exit(f"sessionstate.reference imported from {{sessionstate.reference.__file__}}")
sys.exit(pytest.main(sys.argv[1:]))
"""

#: Which clause groups specify each reference module.
GROUPS = {
    "accounting.py": ["ACCT", "STATS", "OBJ"],
    "attrs.py": ["ADAPT"],
    "base.py": ["OBJ", "RESET"],
    "config.py": ["ENV"],
    "errors.py": ["ADMIT", "LOST"],
    "manager.py": ["KEY", "LRU", "DROP", "STATS", "LOCK", "ADMIT", "LOST", "ACCT"],
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


#: Behaviour of a module that no object of the reference subject shows, and the worked
#: example (a subject on the reference's own classes) and clauses that show it. The base
#: class's ``recomputable`` reads its ``recompute_source``; no reference object has one, so
#: only ``DerivedLatents`` (a ``LatentBuffer`` rebuilt from frames) reaches that code (OBJ-10).
EXAMPLES: dict[str, list[tuple[str, list[str]]]] = {
    "base.py": [("sessionstate.fixtures.state_object_specs:example_subject", ["OBJ-10"])],
}


def commands(modules: list[str]) -> list[list[str]]:
    """The pytest runs that judge a mutant of ``modules``: the suite against the reference
    subject (the modules' clause groups), then against the worked examples of ``EXAMPLES``."""
    groups = sorted({g for m in modules for g in GROUPS.get(m, [])}) if modules else []
    base = [
        sys.executable, "-c", BOOTSTRAP, "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--pyargs", "sessionstate.conformance.suite", "--sessionstate-profile", "mutation",
        # A failed SHOULD clause kills the mutant too: without --strict the exit policy reads
        # it as CONFORMANT (exit 0), which is "survived" here.
        "--sessionstate-strict",
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
    ]  # fmt: skip
    runs = [[*base, *(arg for group in groups for arg in ("--sessionstate-clause", group))]]
    for module in modules:
        for target, clauses in EXAMPLES.get(module, []):
            selected = [arg for clause in clauses for arg in ("--sessionstate-clause", clause)]
            runs.append([*base, "--sessionstate-subject", target, *selected])
    return runs


def main() -> int:
    """0 (the mutant survived) only when every run passes; else the first failing status."""
    for args in commands(mutated_modules()):
        status = subprocess.run(args, cwd=HERE, check=False).returncode
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
