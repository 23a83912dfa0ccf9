"""Our own Hypothesis tests run under the suite's default profile.

The plugin loads that profile only in runs that collect conformance tests, so that
a project's own tests keep their Hypothesis settings; ours opt in here.
"""

from __future__ import annotations

import pytest

from sessionstate.conformance._harness.profiles import DEFAULT_PROFILE, load_profile


def pytest_configure(config: pytest.Config) -> None:
    load_profile(DEFAULT_PROFILE)
