"""Where the project's listeners bind: this machine only, unless the user asks for more.

The rule, for every server the project starts (the mutation bench's cosmic-ray HTTP workers
today; a fuzzing dashboard or a test Redis server later):

- Use a Unix domain socket where the client can reach one: nothing off this machine can
  connect to it, and file permissions decide who on it can.
- Otherwise bind TCP to :data:`LOOPBACK`, never to ``0.0.0.0``, ``::`` or an empty host
  (which bind every interface). Take the address from :func:`bind_host`, or the socket from
  :func:`listen`, rather than writing one out.
- Bind every interface only when the user passed :data:`FLAG` (``--listen-on-all-interfaces``),
  added to a command line with :func:`add_flag`; its help says what that exposes.

These listeners are unauthenticated and some of them run what they are sent (a mutation worker
mutates its tree and runs the tests), so reaching one from the network must never be a default.
:func:`listening_addresses` reads what a set of processes listens on, for tests that check this.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
from collections.abc import Iterable
from pathlib import Path

#: The address a TCP listener binds by default.
LOOPBACK = "127.0.0.1"
#: The address a TCP listener binds when the user passed :data:`FLAG`.
ALL_INTERFACES = "0.0.0.0"
#: The only way to ask for a wider bind.
FLAG = "--listen-on-all-interfaces"


def add_flag(parser: argparse.ArgumentParser) -> None:
    """Add :data:`FLAG` to ``parser``; it sets ``args.listen_on_all_interfaces``."""
    parser.add_argument(
        FLAG,
        action="store_true",
        dest="listen_on_all_interfaces",
        help="listen on every network interface instead of loopback only: anyone who can reach "
        "this machine can then connect, and the listeners are unauthenticated",
    )


def bind_host(all_interfaces: bool = False) -> str:
    """The host a TCP listener binds: :data:`LOOPBACK`, or :data:`ALL_INTERFACES` when the user
    passed :data:`FLAG`."""
    return ALL_INTERFACES if all_interfaces else LOOPBACK


def listen(port: int = 0, *, all_interfaces: bool = False) -> socket.socket:
    """A listening TCP socket on ``bind_host(all_interfaces)`` and ``port`` (0: any free one)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((bind_host(all_interfaces), port))
        server.listen()
    except OSError:
        server.close()
        raise
    return server


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IPv4 or IPv6 address; IPv4-mapped IPv6 counts as IPv4) is loopback."""
    address = ipaddress.ip_address(host)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _address(column: str) -> tuple[str, int]:
    """A ``/proc/net/tcp{,6}`` address column (``0100007F:1F90``): the host is the kernel's
    32-bit words in hexadecimal, each in host (here little-endian) byte order."""
    host, port = column.split(":")
    raw = bytes.fromhex(host)
    raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(raw)), int(port, 16)


def _socket_inodes(pids: Iterable[int]) -> set[int]:
    inodes = set()
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:  # gone, or not ours to read
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[len("socket:[") : -1]))
    return inodes


def listening_addresses(pids: Iterable[int]) -> set[tuple[str, int]]:
    """The (host, port) of every TCP socket in state LISTEN that one of ``pids`` holds open,
    from ``/proc/net/tcp`` and ``/proc/net/tcp6`` (Linux)."""
    inodes = _socket_inodes(pids)
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text(encoding="ascii").splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[9]) in inodes:  # 0A: TCP_LISTEN
                found.add(_address(fields[1]))
    return found


def descendants(pid: int) -> set[int]:
    """``pid`` and every process below it (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        parent = int(text.rsplit(")", 1)[1].split()[1])  # after "(comm)": state, ppid
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo += children.get(current, [])
    return found
