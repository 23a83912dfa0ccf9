"""Import ``sessionstate`` from a given source tree, whatever is installed.

The project maps its packages with setuptools ``package-dir`` (``sessionstate.reference``
lives in ``reference/``, not under ``src/``), so a copy of the tree cannot be made
importable by putting it on ``sys.path``. Mutation workers each run in their own copy
(cosmic-ray mutates files in place, so two workers cannot share one tree); this finder,
placed first on ``sys.meta_path``, sends every mapped package to that copy.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import tomllib


class TreeFinder(MetaPathFinder):
    """Finds the packages named in ``pyproject.toml``'s ``package-dir`` under ``root``."""

    def __init__(self, root: Path) -> None:
        table = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        mapping = table["tool"]["setuptools"]["package-dir"]
        self.packages = {name: (root / folder).resolve() for name, folder in mapping.items()}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        folder = self.packages.get(fullname)
        if folder is None:
            return None  # modules inside a package are found through its __path__
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


def install(root: Path) -> None:
    """Make ``import sessionstate...`` load from ``root`` in this process."""
    for name in [n for n in sys.modules if n == "sessionstate" or n.startswith("sessionstate.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, TreeFinder(root))
