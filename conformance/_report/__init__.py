"""Renderings of a run for people and CI: terminal table, Markdown, JUnit, the HTML matrix,
and ``sessionstate explain``."""
