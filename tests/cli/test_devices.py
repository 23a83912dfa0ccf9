"""Choosing the devices a run allocates on: ``--devices`` and ``Subject(devices=...)``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Accounting that moves every tensor to the host first, as code written for one GPU
# may: a simulated CUDA tensor cannot be moved there, so on cuda:N it raises.
HOST_ONLY = """
from sessionstate.conformance import Subject
from sessionstate.reference import SessionStateManager, device_bytes


def _on_cuda(value):
    import torch
    if isinstance(value, torch.Tensor):
        return value.device.type == "cuda"
    if isinstance(value, dict):
        return any(_on_cuda(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_on_cuda(v) for v in value)
    return False


def host_only_bytes(value, seen):
    if _on_cuda(value):
        raise RuntimeError("this accounting only runs on the host")
    return device_bytes(value, seen)


subject = Subject(name="host-only", manager_factory=SessionStateManager,
                  accounting=host_only_bytes{devices})
"""


def _write(write_module: Any, devices: str = "") -> str:
    return write_module("host_only", HOST_ONLY.format(devices=devices))


def _report(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))


def test_devices_option_leaves_devices_out_and_says_so(run_cli, write_module, tmp_path) -> None:
    module = _write(write_module)
    args = ["check", f"{module}:subject", "--clause", "ACCT-4", "--report-json", "r.json"]
    assert run_cli(*args).returncode == 1  # on every device, it raises on cuda
    result = run_cli(*args, "--devices", "cpu,meta")
    assert result.returncode == 0, result.stdout + result.stderr
    environment = _report(tmp_path)["environment"]
    assert [d["name"] for d in environment["devices"]] == ["cpu", "meta"]
    assert environment["devices_left_out"] == ["cuda:0", "cuda:1"]
    assert "left out: cuda:0, cuda:1" in result.stdout


def test_subject_devices_narrow_the_run(run_cli, write_module, tmp_path) -> None:
    module = _write(write_module, ', devices=("meta",)')
    result = run_cli("check", f"{module}:subject", "--clause", "ACCT-4", "--report-json", "r.json")
    assert result.returncode == 0, result.stdout + result.stderr
    environment = _report(tmp_path)["environment"]
    assert [d["name"] for d in environment["devices"]] == ["cpu", "meta"]  # cpu always kept


def test_an_unknown_device_is_one_line_and_exit_2(run_cli, write_module) -> None:
    module = _write(write_module)
    result = run_cli("check", f"{module}:subject", "--devices", "cpu,tpu")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "sessionstate check: error: --devices: unknown device 'tpu'; this machine has "
        "cpu, meta, cuda:0, cuda:1"
    ]
