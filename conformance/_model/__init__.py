"""The suite's oracles, by domain: plain models of what a conforming subject does,
written from SPEC.md alone, each shared by every machine that needs it (machines by
surface, models by domain).

``manager``: the manager's keys, LRU table, counters and sessions, the model of every
machine that drives a manager; ``memory``, ``dtypes``, ``aliases``, ``records`` and
``host``: allocations and the bytes values hold; ``env`` and ``python_rules``:
configuration and the Python rules it is parsed by; ``bitwise``: bit-for-bit equality
and the suite's own memory walk; ``linearizability``: concurrent histories against a
sequential model of the manager. A model computes what is expected; the rule that names
the clause a mismatch breaks lives in ``_machine``, beside the check that finds it. The
one exception: the manager model labels each of its suspects (``_model.manager.SUSPECTS``,
``_model.manager.key_clause``) with the clause it breaks, for ``_machine.manager`` to
ask. See CONTRIBUTING.md, "Where a clause lives"."""
