"""The state machines, the checks they are made of, and their blame rules: machines by
surface, models by domain.

A machine module drives one surface of the subject and holds the blame rule of every
clause whose mismatch it detects there: ``manager`` the manager's get/drop/stats
surface and the sessions it hands out (KEY, LRU, DROP, STATS, and what those sessions
hold), ``bulk`` the same surface in steps of many calls (large worlds), ``admit`` admission, ``acct`` and ``composed_bytes`` accounting, ``reset`` one
SessionState, ``obj`` and ``object_mirror`` a StateObject, ``env`` the configuration
resolver, ``lock``, ``lock_capacity`` and ``lock_raise`` the manager through its injected
lock and from several threads, ``adapt`` a model adapter, ``lost`` ``require_session``. A clause
checked through two surfaces has a blame rule in each. Expected values come from
``_model``, whose modules model one domain each and serve every machine that needs it;
``stateful`` runs any machine as a ``@given`` test's body. CONTRIBUTING.md ("Where a
clause lives") names each group's homes, and ``tests/docs/test_contributing_homes.py``
holds that table true."""
