"""The run harness: loading the target, profiles, bounding calls, outcomes and verdicts."""
