"""Running a state machine as the body of an ordinary ``@given`` test.

Every property of the suite is a Hypothesis test that pytest collects as it is, so
that HypoFuzz (``hypothesis fuzz``) can fuzz it and fixtures (``subject``) and
``parametrize`` (one machine per ``StateObjectSpec``) work as for any test::

    @pytest.mark.clause(*ManagerMachine.CLAUSES)
    @given(data=st.data())
    def test_manager_machine(subject, data):
        run_steps(lambda: ManagerMachine(subject), data)

The program is Hypothesis' own: ``get_state_machine_test`` is the function HypoFuzz
calls for a ``Machine.TestCase``, and its ``inner_test`` draws the steps from
``data`` and prints the shrunk program, so nothing of the stateful engine is
written again here.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test

__all__ = ["run_steps"]

_FACTORY: ContextVar[Callable[[], RuleBasedStateMachine]] = ContextVar("sessionstate_machine")

# Built once, here: ``get_state_machine_test`` applies ``@given``, and applying it inside a
# running test is a nested ``@given`` (a health check HypoFuzz insists stays on). Its
# factory builds whatever machine the running test asked for.
_PROGRAM = get_state_machine_test(lambda: _FACTORY.get()())  # type: ignore[arg-type]


def run_steps(factory: Callable[[], RuleBasedStateMachine], data: st.DataObject) -> None:
    """Run one program of the machine ``factory()`` builds, its steps drawn from ``data``.

    The calling test's settings decide how many programs run; how long each is
    (``stateful_step_count``) is the profile's, loaded before this module is imported: the
    program's ``@given`` is built here, once, so a test-level ``stateful_step_count`` has no
    effect (a long program gets its length from bulk steps or opening steps instead).

    A machine with a ``finish()`` method has it called once its program ran to the end
    without failing: the last check of the program, which may use up the state
    (``LargeWorldMachine`` evicts every session to see the whole LRU order).
    """
    built: list[RuleBasedStateMachine] = []

    def build() -> RuleBasedStateMachine:
        built.append(factory())
        return built[-1]

    token = _FACTORY.set(build)
    try:
        _PROGRAM.hypothesis.inner_test(data)  # type: ignore[attr-defined]
    finally:
        _FACTORY.reset(token)
    for machine in built:
        finish = getattr(machine, "finish", None)
        if finish is not None:
            finish()
