"""Our own Hypothesis tests run under the suite's default profile.

The plugin loads that profile only in runs that collect conformance tests, so that
a project's own tests keep their Hypothesis settings; ours opt in here. The Redis server
fixtures serve the command tests and the reliability tests alike.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sessionstate.conformance._harness.profiles import DEFAULT_PROFILE, load_profile


def pytest_configure(config: pytest.Config) -> None:
    load_profile(DEFAULT_PROFILE)


#: pytest-randomly is installed for tests/plugin/test_foreign.py, which switches it on
#: in its own runs; every other pytest process our tests start keeps the order it is given
#: (pyproject's addopts do the same for this one), as the suite's zoo timings assume.
os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} -p no:randomly".strip()


#: The slowest tests, slowest first (seconds each on CI's 2 cores): a fresh venv (~120),
#: HypoFuzz runs (~30-120), the supervised runs, the zoo's check processes (~10 each).
#: ``nox -s tests`` hands tests to xdist's workers in collection order and lets an idle
#: worker steal (``--dist worksteal``): started first, they overlap with everything else
#: instead of one of them being the last thing a worker does while the other idles.
SLOW_FIRST = (
    "tests/cli/test_first_contact.py",
    "tests/cli/test_fuzz",
    "tests/upstream/",
    "tests/reliability/test_supervision.py",
    "tests/zoo/test_false_positive.py",
    "tests/cli/test_workflow_template.py",
    "tests/plugin/test_deadlines.py",
    "tests/conformance/test_adapters.py",
    "tests/zoo/",
    "tests/cli/test_explain.py",
    "tests/cli/test_database.py",
    "tests/reliability/",
    "tests/plugin/",
    "tests/conformance/test_worked_examples.py",
)


def _slowness(item: pytest.Item) -> int:
    path = item.nodeid.split("::")[0]
    return next((rank for rank, prefix in enumerate(SLOW_FIRST) if path.startswith(prefix)),
                len(SLOW_FIRST))  # fmt: skip


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first (``SLOW_FIRST``); a stable sort, so any other order is kept."""
    items.sort(key=_slowness)


@dataclass
class RedisServer:
    """A ``redis-server`` of the test's own, on a free loopback port."""

    port: int
    password: str | None
    process: subprocess.Popen[bytes]

    def url(self, user: str | None = None) -> str:
        """``redis://[user]:PASSWORD@127.0.0.1:PORT/0`` (no userinfo without a password)."""
        auth = f"{user or ''}:{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        """Stop the server and wait for it: a client's next call is refused."""
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """``redis_server(password=None)`` starts a server (stopped at teardown) and waits until
    it answers. Without the ``redis-server`` binary the test skips, saying so, except in
    CI (``CI=true``), where .ci/run installs it and its absence fails."""
    redis = pytest.importorskip("redis", reason="redis is in the [fuzz] extra")
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is not installed; .ci/run installs it (apt redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    started: list[RedisServer] = []

    def start(password: str | None = None) -> RedisServer:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        auth = ["--requirepass", password] if password else []
        process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(tmp_path), *auth],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        server = RedisServer(port, password, process)
        started.append(server)
        client = redis.Redis(host="127.0.0.1", port=port, password=password,
                             socket_connect_timeout=1)  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    output = process.stdout.read().decode() if process.stdout else ""
                    pytest.fail(f"redis-server did not start on port {port}: {output[-2000:]}")
                time.sleep(0.1)
        client.close()
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def redis_url(redis_server: Callable[..., RedisServer]) -> str:
    """The URL of a fresh ``redis_server()`` without a password."""
    return redis_server().url()
