"""A pytest plugin object for benchmarks: counts stateful steps and notes the first failure.

Kept out of the shipped suite on purpose: it patches Hypothesis' stateful
runner (``check_invariants`` runs once after initialisation and after every
step) and ``ClauseFailure`` for the duration of one in-process pytest run.
"""

from __future__ import annotations

import re
import time
from typing import Any

from hypothesis.stateful import RuleBasedStateMachine

from sessionstate.conformance import checks

# pytest prefixes the lines of the printed program with "E" in the failure text.
_PROGRAM_STEP = re.compile(r"^E?\s*state\.(?!teardown\(|check_)\w+\(", re.MULTILINE)


class Instrument:
    """Counts steps; records steps and seconds at the first ClauseFailure raised.

    ``seconds`` runs from before pytest starts (imports and collection included, as a
    cold CI job sees it); ``search_seconds`` from the end of collection (the suite's
    own search).
    """

    def __init__(self) -> None:
        self.steps = 0
        self.started = time.monotonic()
        self.collected: float | None = None  # when collection ended: the search starts
        self.first_failure: dict[str, Any] | None = None
        self.shrunk_steps: list[int] = []
        self._patched: list[tuple[Any, str, Any]] = []

    def pytest_configure(self) -> None:
        original_check = RuleBasedStateMachine.check_invariants
        original_init = checks.ClauseFailure.__init__
        outer = self

        def counting_check(machine: Any, *args: Any, **kwargs: Any) -> Any:
            outer.steps += 1
            return original_check(machine, *args, **kwargs)

        def noting_init(error: Any, clause: str, message: str) -> None:
            original_init(error, clause, message)
            if outer.first_failure is None:
                now = time.monotonic()
                outer.first_failure = {
                    "clause": clause,
                    "steps": outer.steps,
                    "seconds": now - outer.started,
                    "search_seconds": now - (outer.collected or outer.started),
                }

        RuleBasedStateMachine.check_invariants = counting_check  # type: ignore[method-assign]
        checks.ClauseFailure.__init__ = noting_init  # type: ignore[method-assign]
        self._patched = [
            (RuleBasedStateMachine, "check_invariants", original_check),
            (checks.ClauseFailure, "__init__", original_init),
        ]

    def pytest_collection_finish(self) -> None:
        self.collected = time.monotonic()

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed and report.when == "call":
            # The falsifying program Hypothesis printed: one `state.rule(...)` line a step.
            self.shrunk_steps.append(len(_PROGRAM_STEP.findall(report.longreprtext)) or 1)

    def pytest_unconfigure(self) -> None:
        for owner, name, original in self._patched:
            setattr(owner, name, original)
