#!/usr/bin/env python3
"""A local kbroker cluster in one command: a ZooKeeper and N brokers on 127.0.0.1 (see scripts/cluster).

    scripts/cluster up [--brokers 3] [--dir ./cluster] [--base-port 9092] [--zookeeper-port 2181]
    scripts/cluster status [--dir ./cluster]
    scripts/cluster down [--dir ./cluster] [--delete-data]

Everything lives under one directory: ZooKeeper's data, each broker's data (broker-N/) and logs
(broker-N.log, zookeeper.log), and cluster.json with the ports and process ids. Brokers get node.id 1..N,
listen on consecutive ports from --base-port and share zookeeper.connect 127.0.0.1:PORT/kbroker.
Extra broker settings: --config KEY=VALUE (repeatable), given to every broker.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from zookeeper import ZooKeeperServer, four_letter_word  # noqa: E402

CHROOT = "/kbroker"
STATE = "cluster.json"


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours counts as gone
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return False
    return True


def _wait_port(port: int, timeout: float, pid: int) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.3):
            return True
        time.sleep(0.1)
    return False


def _load(directory: Path) -> dict[str, Any] | None:
    path = directory / STATE
    return json.loads(path.read_text()) if path.exists() else None


def up(args: argparse.Namespace) -> int:
    directory: Path = args.dir.resolve()
    state = _load(directory)
    if state is not None and any(_alive(p["pid"]) for p in [state["zookeeper"], *state["brokers"]]):
        print(f"a cluster is already running from {directory}: scripts/cluster status / down", file=sys.stderr)
        return 1
    ports = [args.zookeeper_port, *(args.base_port + i for i in range(args.brokers))]
    busy = [p for p in ports if not _port_free(p)]
    if busy:
        print(f"ports in use: {busy} (choose others with --base-port / --zookeeper-port)", file=sys.stderr)
        return 1
    directory.mkdir(parents=True, exist_ok=True)
    zookeeper = ZooKeeperServer(args.zookeeper_port, directory / "zookeeper", log_path=directory / "zookeeper.log")
    zookeeper.start()
    assert zookeeper.process is not None
    state = {
        "zookeeper": {"port": zookeeper.port, "pid": zookeeper.process.pid},
        "connect": f"{zookeeper.connect_string}{CHROOT}",
        "brokers": [],
    }
    print(f"zookeeper  {zookeeper.connect_string}  pid {zookeeper.process.pid}")
    for index in range(args.brokers):
        node_id, port = index + 1, args.base_port + index
        command = [
            sys.executable,
            "-m",
            "kbroker",
            "serve",
            "--data-dir",
            str(directory / f"broker-{node_id}"),
            "--listen",
            f"127.0.0.1:{port}",
            "--config",
            f"node.id={node_id}",
            "--config",
            f"zookeeper.connect={state['connect']}",
        ]
        # the coordinators' internal topics are created only once as many brokers as their replication
        # factor are live (Kafka's default 3): a smaller cluster gets a factor it can meet
        factor = min(3, args.brokers)
        for name in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor"):
            command += ["--config", f"{name}={factor}"]
        command += ["--config", f"transaction.state.log.min.isr={min(2, factor)}"]
        for extra in args.config:
            command += ["--config", extra]
        with open(directory / f"broker-{node_id}.log", "ab") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        state["brokers"].append({"id": node_id, "port": port, "pid": process.pid})
        (directory / STATE).write_text(json.dumps(state, indent=2) + "\n")
        if not _wait_port(port, 30, process.pid):
            print(f"broker {node_id} did not start: see {directory / f'broker-{node_id}.log'}", file=sys.stderr)
            return 1
        print(f"broker {node_id}   127.0.0.1:{port}  pid {process.pid}")
    (directory / STATE).write_text(json.dumps(state, indent=2) + "\n")
    bootstrap = ",".join(f"127.0.0.1:{b['port']}" for b in state["brokers"])
    print(f"bootstrap.servers={bootstrap}")
    print(f"zookeeper.connect={state['connect']}")
    return 0


def _registered(connect: str) -> tuple[set[int], int | None]:
    """Brokers registered in ZooKeeper and the controller, read with a short-lived kazoo session."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    client = KazooClient(hosts=connect, timeout=5)
    client.start(timeout=5)
    try:
        ids = {int(c) for c in client.get_children("/brokers/ids") if c.isdigit()}
        try:
            data, _ = client.get("/controller")
            controller: int | None = int(json.loads(data)["brokerid"])
        except NoNodeError:
            controller = None
        return ids, controller
    finally:
        client.stop()
        client.close()


def status(args: argparse.Namespace) -> int:
    state = _load(args.dir.resolve())
    if state is None:
        print(f"no cluster in {args.dir.resolve()}", file=sys.stderr)
        return 1
    zookeeper = state["zookeeper"]
    serving = False
    with contextlib.suppress(OSError):
        serving = "Mode:" in four_letter_word(zookeeper["port"], "srvr")
    print(f"zookeeper  127.0.0.1:{zookeeper['port']}  pid {zookeeper['pid']}  {'running' if serving else 'down'}")
    registered: set[int] = set()
    controller = None
    if serving:
        registered, controller = _registered(state["connect"])
    for broker in state["brokers"]:
        running = _alive(broker["pid"])
        notes = ["running" if running else "down"]
        if broker["id"] in registered:
            notes.append("registered")
        if broker["id"] == controller:
            notes.append("controller")
        print(f"broker {broker['id']}   127.0.0.1:{broker['port']}  pid {broker['pid']}  {', '.join(notes)}")
    print(f"controller: {controller if controller is not None else 'none'}")
    return 0


def _stop(pid: int, timeout: float) -> None:
    if not _alive(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def down(args: argparse.Namespace) -> int:
    directory: Path = args.dir.resolve()
    state = _load(directory)
    if state is None:
        print(f"no cluster in {directory}", file=sys.stderr)
        return 1
    for broker in state["brokers"]:
        _stop(broker["pid"], 30)
        print(f"broker {broker['id']} stopped")
    _stop(state["zookeeper"]["pid"], 20)
    print("zookeeper stopped")
    if args.delete_data:
        shutil.rmtree(directory)
        print(f"deleted {directory}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/cluster", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("up", help="start ZooKeeper and the brokers")
    start.add_argument("--brokers", type=int, default=3)
    start.add_argument("--base-port", type=int, default=9092)
    start.add_argument("--zookeeper-port", type=int, default=2181)
    start.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    show = sub.add_parser("status", help="each broker's id, address, process id, and the controller")
    stop = sub.add_parser("down", help="stop the brokers, then ZooKeeper")
    stop.add_argument("--delete-data", action="store_true")
    for command in (start, show, stop):
        command.add_argument("--dir", type=Path, default=Path("cluster"))
    args = parser.parse_args(argv)
    if args.command == "up" and args.brokers < 1:
        parser.error("--brokers must be at least 1")
    return {"up": up, "status": status, "down": down}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
