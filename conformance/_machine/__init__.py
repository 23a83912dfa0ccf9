"""The state machines and their blame rules, one module per clause group: each drives a
subject against its group's model in ``_model`` and names the clause a mismatch breaks."""
