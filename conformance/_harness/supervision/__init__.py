"""Supervision: run the suite's tests where subject code cannot take the verdict away, bound
them, and keep what they found. Every bound on a run is in this package.

Who does what:

- ``supervisor``: ``sessionstate check`` itself. It starts the suite in a child process
  (``spawn``, ``child``), follows it through the run journal (``journal``, read into the
  ``ledger``), kills what runs past a bound, starts a new child for the tests left when
  one dies (at most ``supervisor.MAX_ATTEMPTS``), and hands the results over every child
  to the reports. ``validation`` checks a request in a child before any run.
- ``guard``: inside the child, the plugin's bounds on each test: the ``watchdog`` around its
  call phase, its share of the run's time, and the outcomes only the suite may decide
  (``own_outcomes``). ``forks``: a fork by subject code never runs the suite twice.
- ``stack_dumps``: the call in flight and a fatal error, named from faulthandler's dumps.
- ``frames``: whose code a frame is (the suite's, a library's or the subject's), the rule
  the watchdog, the fork guard and the dumps share.

Where a run is bounded (the module that decides it, then the one that enforces it):

- **One call** (``deadline``, ``watchdog``): ``SESSIONSTATE_CALL_TIMEOUT`` (5 s). A call
  blocked on a lock past it fails LOCK-3 (or a ``blame`` block's clause); one still
  computing is waited for up to ``CONFIRM_FACTOR`` deadlines times the load, then is too
  slow to judge; a function that cost a test its verdict is cut after
  ``SLOW_CALL_SECONDS`` in every later test.
- **A test's own threads** (``thread_deadline``, ``wait_channel``): one deadline for all,
  blocked told from slow the same way.
- **One test** (``bounds``, ``supervisor``): ``SESSIONSTATE_TEST_TIMEOUT`` (per profile);
  the process running it is killed and the test cut off, naming the call in flight.
- **A test's share of the run** (``bounds.test_budget``, ``guard``): what is left of the
  run over the tests left; past it the test stops for time, naming the call.
- **The whole run** (``bounds``, ``supervisor``): ``SESSIONSTATE_RUN_TIMEOUT`` (per
  profile); the tests running are cut off, those not run are unchecked, no child starts.
- **Start-up** (``bounds.STARTUP_SECONDS``; ``supervisor``, ``validation``): imports,
  hooks and collection.
- **Processes and memory** (``census``, ``supervisor``): ``SESSIONSTATE_MAX_PROCESSES``
  and ``SESSIONSTATE_MAX_MEMORY_MB``; past a cap the run stops and never resumes.
- **Forks** (``forks``): a forked copy of a test's process ends on its return into the suite.
- **Exit and signals** (``supervisor``): ``EXIT_GRACE`` after the results are written;
  SIGINT, SIGTERM and SIGHUP are forwarded, ``SIGNAL_GRACE``, then the group is killed.

Slowness is never a clause failure: what ran out of time is unchecked (exit 3), naming
the call; only a call that waits and never returns fails a clause.
"""
