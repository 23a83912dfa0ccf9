"""Unit test of the ``sessionstate demo`` command, which drives the reference manager."""

from __future__ import annotations

import pytest

from sessionstate.cli import main


class TestDemo:
    def test_output(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Three sessions in a cap of two: one eviction, and the shared prompt counted once."""
        assert main(["demo"]) == 0
        frames, prompt = 16 * 4, 64 * 4  # one float32 frame per session, one shared prompt
        expected = {
            "sessions": 2,
            "max_sessions": 2,
            "total_nbytes": 2 * frames + prompt,
            "hits": 0,
            "misses": 3,
            "evictions": 1,
            "nbytes:cpu": 2 * frames + prompt,
        }
        lines = [f"{key:>16}: {value}" for key, value in expected.items()]
        assert capsys.readouterr() == ("\n".join(lines) + "\n", "")
