"""The ``sessionstate`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sessionstate",
        description="Reference session state manager and its conformance suite.",
    )
    parser.add_argument("--version", action="version", version=f"sessionstate {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("demo", help="build a reference manager, use it, print stats()")
    return parser


def _demo() -> int:
    import torch

    from .reference import LatentBuffer, SessionStateManager

    manager = SessionStateManager(max_sessions=2)
    shared = torch.zeros(64)
    for session_id in ("a", "b", "c"):
        session = manager.get_or_create_session(session_id)
        frames = session.get_or_create("frames", LatentBuffer, LatentBuffer)
        frames.allocate(maxlen=4)
        frames.append(torch.zeros(16))
        session.attrs["prompt_embeds"] = shared
    for key, value in manager.stats().items():
        print(f"{key:>16}: {value}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "demo":
        return _demo()
    _build_parser().print_help()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
