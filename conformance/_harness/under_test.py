"""What is under test: the subject, the versions and the devices of a run.

These facts feed the report header and the JSON results. They are gathered
where the subject is loaded, because gathering them is not free: the subject's
module imports torch (about 0.8 s here), which probing for devices needs too
(simulated CUDA devices are host tensors, and cost little more). An xdist
controller runs no test, so it does not gather them: each worker sends its own
at the end of the run, and the controller prints them in the summary. Paying
for them up front in the controller would delay the start of every worker.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any


def gather(subject: Any) -> dict[str, Any]:
    """The facts of a run against ``subject``, as plain data (xdist sends them as is)."""
    from sessionstate.conformance._harness.own_hooks import hook_origins

    return {
        "subject": subject.name,
        "capabilities": sorted(subject.capabilities),
        # Which hooks are the subject's own and which the reference's (own_hooks).
        "hooks": hook_origins(subject),
        "environment": environment(),
    }


def environment() -> dict[str, Any]:
    """The versions the suite runs with, and the devices it allocates on."""
    import hypothesis
    import numpy
    import torch

    from sessionstate.conformance._harness.devices import (
        available_devices,
        is_simulated,
        left_out_devices,
    )

    return {
        # str(): torch's is a TorchVersion, which xdist's channel cannot send.
        "torch": str(torch.__version__),
        "numpy": str(numpy.__version__),
        "hypothesis": str(hypothesis.__version__),
        "devices": [{"name": d, "simulated": is_simulated(d)} for d in available_devices()],
        # Devices this machine has that the run was told not to use (--devices).
        "devices_left_out": list(left_out_devices()),
    }


def header_lines(
    version: str, target: str, profile: str, seed: int | None, env_line: str, facts: dict[str, Any]
) -> list[str]:
    """The report header for a run whose facts are known."""
    from sessionstate.conformance._harness.own_hooks import origins_line

    environment = facts["environment"]
    devices = ", ".join(
        d["name"] + (" (simulated)" if d["simulated"] else "") for d in environment["devices"]
    )
    return [
        f"sessionstate {version}: subject {facts['subject']!r} from {target}",
        _profile_line(profile, seed),
        f"  torch {environment['torch']}, numpy {environment['numpy']}, "
        f"hypothesis {environment['hypothesis']}",
        f"  devices: {devices}" + _left_out(environment),
        f"  capabilities: {', '.join(facts['capabilities']) or '(none)'}",
        f"  {origins_line(facts.get('hooks'))}",
        env_line,
    ]


def controller_header_lines(
    version: str, target: str, profile: str, seed: int | None, env_line: str
) -> list[str]:
    """The header of an xdist controller: what it knows without loading the subject.

    Versions come from the installed distributions' metadata, which imports nothing.
    """
    versions = ", ".join(f"{name} {_installed(name)}" for name in ("torch", "numpy", "hypothesis"))
    return [
        f"sessionstate {version}: subject from {target}, loaded by each xdist worker "
        "(subject, devices and capabilities follow the results)",
        _profile_line(profile, seed),
        f"  {versions}",
        env_line,
    ]


def _left_out(environment: dict[str, Any]) -> str:
    left_out = environment.get("devices_left_out") or []
    return f" (left out: {', '.join(left_out)})" if left_out else ""


def _profile_line(profile: str, seed: int | None) -> str:
    from sessionstate.conformance._harness.search import order

    return f"  profile {profile}, {order(profile, seed)}"


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "(not installed)"
