"""The partition nemesis' network on real namespaces: brokers reach each other and the root namespace
reaches them; an isolated one still takes the root namespace's connections but none from its peers, and
the heal restores them; nothing is left behind, and a dead run's leftovers are removed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from scripts.faults import netns
from scripts.faults.netns import Network

pytestmark = pytest.mark.skipif(netns.available() is not None, reason=str(netns.available()))

SERVE = "import socket,sys; s=socket.create_server((sys.argv[1], 9092)); print('up', flush=True); [s.accept()[0].close() for _ in iter(int, 1)]"
CONNECT = "import socket,sys; socket.create_connection((sys.argv[1], 9092), timeout=2).close()"


@pytest.fixture
def network() -> Iterator[Network]:
    with Network(3) as net:
        servers = []
        try:
            for index in range(3):
                server = subprocess.Popen(
                    [*net.exec_prefix(index), sys.executable, "-c", SERVE, net.address(index)],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                assert server.stdout is not None and server.stdout.readline().strip() == "up"
                servers.append(server)
            yield net
        finally:
            for server in servers:
                server.kill()
                server.wait()


def reaches(net: Network, source: int | None, target: int) -> bool:
    prefix = [] if source is None else net.exec_prefix(source)
    done = subprocess.run([*prefix, sys.executable, "-c", CONNECT, net.address(target)], capture_output=True)
    return done.returncode == 0


def test_isolation_cuts_peers_not_clients_and_heals(network: Network) -> None:
    assert all(reaches(network, s, t) for s in (None, 0, 1, 2) for t in range(3) if s != t)
    network.isolate(1)
    assert reaches(network, None, 1)  # clients still reach the isolated broker
    assert not reaches(network, 0, 1) and not reaches(network, 1, 2)
    assert reaches(network, 0, 2) and reaches(network, 2, 0)  # the majority still talks
    network.heal()
    assert reaches(network, 0, 1) and reaches(network, 1, 2)


def test_down_removes_everything_and_leftovers_of_dead_runs_go() -> None:
    net = Network(2).up()
    net.down()
    mine = f"{netns.PREFIX}{net.pid}"
    assert mine not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert mine not in subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    Network(2).up().down()  # the same names again in one process
    dead = subprocess.Popen(["true"])
    dead.wait()  # a process id that is gone
    name = f"{netns.PREFIX}{dead.pid}n0"
    subprocess.run(["ip", "netns", "add", name], check=True)
    assert name in netns.clean_leftovers()
    assert name not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
