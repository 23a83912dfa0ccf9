"""Sphinx configuration of the API reference, built from the docstrings.

Build it with ``nox -s docs`` (warnings are errors), or
``sphinx-build -W -b html docs/api build/docs/html``.
"""

from __future__ import annotations

import warnings

from sessionstate import __version__

project = "sessionstate"
author = "The sessionstate developers"
copyright = "The sessionstate developers, Apache-2.0"
release = version = __version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
# The signatures carry the types; the text says the contract.
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
# Annotations name torch, numpy and Hypothesis types the reference does not document.
nitpicky = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "alabaster"
exclude_patterns = ["_build"]

# torch warns once on import about NumPy features it does not need here.
warnings.filterwarnings("ignore", category=UserWarning, module="torch")
