"""Nothing the project starts listens beyond this machine unless the user asks (bench/loopback.py).

The mutation bench's cosmic-ray HTTP workers run whatever mutate-and-test job they are sent, with
no authentication; they must be reachable from this machine only. These tests read what the
processes they start listen on from ``/proc/net/tcp`` and ``/proc/net/tcp6``.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import loopback  # noqa: E402
import mutation  # noqa: E402

linux_proc = pytest.mark.skipif(
    not Path("/proc/net/tcp").exists(), reason="reads listening sockets from Linux /proc/net"
)


def test_the_wider_bind_needs_the_flag_that_says_so() -> None:
    parser = argparse.ArgumentParser()
    loopback.add_flag(parser)
    assert loopback.bind_host(parser.parse_args([]).listen_on_all_interfaces) == "127.0.0.1"
    wide = parser.parse_args(["--listen-on-all-interfaces"]).listen_on_all_interfaces
    assert loopback.bind_host(wide) == "0.0.0.0"


def test_loopback_addresses_are_told_from_the_others() -> None:
    assert loopback.is_loopback("127.0.0.1")
    assert loopback.is_loopback("127.5.0.1")
    assert loopback.is_loopback("::1")
    assert loopback.is_loopback("::ffff:127.0.0.1")
    for wide in ("0.0.0.0", "::", "::ffff:0.0.0.0", "192.168.1.2", "fe80::1"):
        assert not loopback.is_loopback(wide), wide


def test_proc_net_address_columns_are_read_in_kernel_word_order() -> None:
    assert loopback._address("0100007F:1F90") == ("127.0.0.1", 8080)
    assert loopback._address("00000000:0050") == ("0.0.0.0", 80)
    assert loopback._address("00000000000000000000000001000000:0016") == ("::1", 22)
    mapped, port = loopback._address("0000000000000000FFFF00000100007F:0016")
    assert (ipaddress.ip_address(mapped), port) == (ipaddress.ip_address("::ffff:127.0.0.1"), 22)


@linux_proc
def test_a_listener_is_found_with_its_address_and_owner() -> None:
    with loopback.listen() as server:
        port = server.getsockname()[1]
        assert ("127.0.0.1", port) in loopback.listening_addresses([os.getpid()])
    assert ("127.0.0.1", port) not in loopback.listening_addresses([os.getpid()])


@linux_proc
def test_mutation_workers_listen_on_loopback_only() -> None:
    """The workers started exactly as ``nox -s mutation`` starts them."""
    with mutation.http_workers(2) as urls:
        found = loopback.listening_addresses(loopback.descendants(os.getpid()))
    ports = {int(url.rsplit(":", 1)[1]) for url in urls}
    assert ports <= {port for _, port in found}, (urls, found)  # the workers' sockets were seen
    assert {(host, port) for host, port in found if not loopback.is_loopback(host)} == set()
