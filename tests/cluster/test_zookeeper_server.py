"""The standalone ZooKeeper the cluster mode runs on: it serves, restarts on its port with its data, stops."""

from __future__ import annotations

import socket

import pytest

from scripts.zookeeper import ZooKeeperServer, four_letter_word
from tests.ports import free_port


def test_serves_standalone_and_stops(zookeeper: ZooKeeperServer) -> None:
    answer = four_letter_word(zookeeper.port, "srvr")
    assert "Mode: standalone" in answer
    assert "Zookeeper version: 3.9." in answer
    assert four_letter_word(zookeeper.port, "ruok") == "imok"


def test_restart_keeps_port_and_stop_closes_it() -> None:
    with ZooKeeperServer(free_port()) as server:
        port = server.port
        server.stop()
        assert not server.running
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            pass
        server.start()
        assert server.port == port
        assert "Mode: standalone" in four_letter_word(port, "srvr")
        data = server.data_dir
    assert not data.exists()  # a temporary data directory goes with the server
