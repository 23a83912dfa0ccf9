"""The conformance tests, one module per clause group (``test_lru.py`` for ``LRU-*``).

Run with ``sessionstate check TARGET`` or
``pytest --pyargs sessionstate.conformance --sessionstate-subject TARGET``.
"""
