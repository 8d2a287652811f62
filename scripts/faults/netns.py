"""A private network for the partition nemesis: one network namespace per broker, veth pairs to a bridge.

    root namespace: bridge kbf<pid>br, 10.<a>.<b>.1/24 (clients, and ZooKeeper for kbroker)
    namespace kbf<pid>n<i>: eth0 10.<a>.<b>.<10+i>/24, lo

Clients and ZooKeeper stay in the root namespace and reach the brokers through the bridge. `isolate(i)`
adds iptables DROP rules inside broker i's namespace for the other brokers' addresses and, if given, for
ZooKeeper's port on the bridge address: the broker keeps answering clients but cannot reach its peers or
ZooKeeper, nor they it. `heal()` flushes them. Every name carries the creating process id, so `clean_leftovers`
removes what a dead run left and never touches a live run's network. Needs root, `ip` and `iptables`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess

PREFIX = "kbf"


def _run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), check=check, capture_output=True, text=True)


def available() -> str | None:
    """None if namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install iproute2 iptables)"
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_leftovers() -> list[str]:
    """Delete the namespaces and bridges of fault runs whose process is gone; the names removed."""
    removed = []
    names = _run("ip", "netns", "list", check=False).stdout.split("\n")
    links = _run("ip", "-o", "link", "show", check=False).stdout.split("\n")
    candidates = [line.split()[0] for line in names if line.strip()]
    candidates += [line.split(":")[1].strip().split("@")[0] for line in links if line.count(":") >= 2]
    for name in candidates:
        match = re.fullmatch(rf"{PREFIX}(\d+)(n\d+|br|v\d+)", name)
        if match is None or _alive(int(match.group(1))):
            continue
        if not match.group(2).startswith("n"):  # a bridge, or the root end of a veth pair (both ends go)
            _run("ip", "link", "delete", name, check=False)
        else:
            _run("ip", "netns", "delete", name, check=False)
        removed.append(name)
    return removed


def _free_subnet(seed: int) -> str:
    """A /24 in 10.200.0.0-10.255.255.0 that no route of the root namespace uses, picked from seed."""
    routes = _run("ip", "-4", "route", "show", check=False).stdout
    for step in range(56 * 256):
        n = (seed + step) % (56 * 256)
        subnet = f"10.{200 + n // 256}.{n % 256}"
        if f"{subnet}.0/" not in routes:
            return subnet
    raise RuntimeError("no free 10.x.y.0/24 for the fault network")


class Network:
    """The bridge and `size` namespaces; a context manager that always takes them down."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pid = os.getpid()
        self.bridge = f"{PREFIX}{self.pid}br"
        self.subnet = _free_subnet(self.pid)
        self.isolated: set[int] = set()
        self.zookeeper_port: int | None = None

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge (clients, ZooKeeper)."""
        return f"{self.subnet}.1"

    def namespace(self, index: int) -> str:
        return f"{PREFIX}{self.pid}n{index}"

    def veth(self, index: int) -> str:
        """The root namespace's end of broker index's veth pair."""
        return f"{PREFIX}{self.pid}v{index}"

    def address(self, index: int) -> str:
        return f"{self.subnet}.{10 + index}"

    def exec_prefix(self, index: int) -> list[str]:
        """Prepend to a command to run it in broker `index`'s namespace (ip execs it: same process id)."""
        return ["ip", "netns", "exec", self.namespace(index)]

    def up(self) -> Network:
        why = available()
        if why:
            raise RuntimeError(why)
        clean_leftovers()
        self._remove_links()  # a previous network of this process (names repeat within one process)
        try:
            _run("ip", "link", "add", self.bridge, "type", "bridge")
            _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _run("ip", "link", "set", self.bridge, "up")
            for index in range(self.size):
                namespace, outside, inside = (
                    self.namespace(index),
                    self.veth(index),
                    f"{self.bridge[:-2]}p{index}",
                )
                _run("ip", "netns", "add", namespace)
                _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
                _run("ip", "link", "set", inside, "netns", namespace)
                _run("ip", "link", "set", outside, "master", self.bridge)
                _run("ip", "link", "set", outside, "up")
                inner = ["ip", "netns", "exec", namespace]
                _run(*inner, "ip", "link", "set", "lo", "up")
                _run(*inner, "ip", "link", "set", inside, "name", "eth0")
                _run(*inner, "ip", "addr", "add", f"{self.address(index)}/24", "dev", "eth0")
                _run(*inner, "ip", "link", "set", "eth0", "up")
        except BaseException:
            self.down()
            raise
        return self

    def _rules(self, index: int) -> list[list[str]]:
        """The DROP rules that cut broker `index` off from its peers (and ZooKeeper), as iptables arguments."""
        rules = []
        for other in range(self.size):
            if other != index:
                rules.append(["INPUT", "-s", self.address(other), "-j", "DROP"])
                rules.append(["OUTPUT", "-d", self.address(other), "-j", "DROP"])
        if self.zookeeper_port is not None:
            port = str(self.zookeeper_port)
            rules.append(["INPUT", "-s", self.gateway, "-p", "tcp", "--sport", port, "-j", "DROP"])
            rules.append(["OUTPUT", "-d", self.gateway, "-p", "tcp", "--dport", port, "-j", "DROP"])
        return rules

    def isolate(self, index: int) -> None:
        """Cut broker `index` off from the other brokers and from ZooKeeper; clients still reach it."""
        for rule in self._rules(index):
            _run(*self.exec_prefix(index), "iptables", "-A", *rule)
        self.isolated.add(index)

    def heal(self) -> None:
        for index in sorted(self.isolated):
            _run(*self.exec_prefix(index), "iptables", "-F", check=False)
        self.isolated.clear()

    def _remove_links(self) -> None:
        # a deleted namespace is torn down by the kernel later, its veth pairs with it: delete them now
        for index in range(self.size):
            _run("ip", "link", "delete", self.veth(index), check=False)
        _run("ip", "link", "delete", self.bridge, check=False)

    def down(self) -> None:
        self.heal()
        self._remove_links()
        for index in range(self.size):
            with contextlib.suppress(Exception):
                _run("ip", "netns", "delete", self.namespace(index), check=False)
        _run("ip", "link", "delete", self.bridge, check=False)

    def __enter__(self) -> Network:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()
