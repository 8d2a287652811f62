#!/usr/bin/env python3
"""Apache ZooKeeper for kbroker's cluster mode: fetch its jars from Maven Central once, run a standalone server.

Usage from the command line::

    scripts/zookeeper.py fetch                         # resolve the jars into the cache, print the libs dir
    scripts/zookeeper.py run --port 2181 --data-dir D  # run until Ctrl-C / SIGTERM

From Python (tests, scripts/cluster)::

    with ZooKeeperServer() as zk:
        print(zk.connect_string)        # 127.0.0.1:PORT
        zk.stop(); zk.start()           # the same port and data: sessions may survive, as with a real restart

The jars: `org.apache.zookeeper:zookeeper` and what it needs at run time as a standalone server with the NIO
connection factory (the default): zookeeper-jute, audience-annotations, commons-io, Dropwizard's metrics-core
(the default metrics provider's summaries) and snappy-java (loaded by the snapshot code even when snapshots are
not compressed), both declared `provided` by ZooKeeper, plus slf4j-simple for its logs. Netty (only for the
Netty connection factory and TLS) is left out: a standalone plaintext server never loads it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

ZOOKEEPER_VERSION = os.environ.get("KBROKER_ZOOKEEPER_VERSION", "3.9.5")
CACHE_ROOT = Path(os.environ.get("KBROKER_CACHE", Path.home() / ".cache" / "kbroker"))
HEAP = "-Xmx128m"

POM_TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kbroker.cluster</groupId>
  <artifactId>apache-zookeeper</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.zookeeper</groupId>
      <artifactId>zookeeper</artifactId>
      <version>{version}</version>
      <exclusions>
        <exclusion><groupId>io.netty</groupId><artifactId>netty-handler</artifactId></exclusion>
        <exclusion><groupId>io.netty</groupId><artifactId>netty-transport-native-epoll</artifactId></exclusion>
        <exclusion><groupId>io.netty</groupId><artifactId>netty-tcnative-boringssl-static</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <groupId>io.dropwizard.metrics</groupId>
      <artifactId>metrics-core</artifactId>
      <version>4.1.12.1</version>
    </dependency>
    <dependency>
      <groupId>org.xerial.snappy</groupId>
      <artifactId>snappy-java</artifactId>
      <version>1.1.10.5</version>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-simple</artifactId>
      <version>2.0.13</version>
    </dependency>
  </dependencies>
</project>
"""


def zookeeper_home(version: str = ZOOKEEPER_VERSION) -> Path:
    return CACHE_ROOT / f"apache-zookeeper-{version}"


def ensure_jars(version: str = ZOOKEEPER_VERSION) -> Path:
    """Resolve ZooKeeper's jars with Maven into the cache, once; return the libs directory."""
    home = zookeeper_home(version)
    libs = home / "libs"
    marker = home / ".complete"
    pom = POM_TEMPLATE.format(version=version)
    home.parent.mkdir(parents=True, exist_ok=True)
    # one resolver at a time (parallel test workers each start a ZooKeeper); the others find it done
    with open(home.parent / f"{home.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and marker.read_text() == pom:
            return libs
        home.mkdir(parents=True, exist_ok=True)
        (home / "pom.xml").write_text(pom)
        shutil.rmtree(libs, ignore_errors=True)
        command = ["mvn", "-q", "-B", "-f", str(home / "pom.xml"), "dependency:copy-dependencies"]
        subprocess.run([*command, f"-DoutputDirectory={libs}", "-DincludeScope=runtime"], check=True)
        marker.write_text(pom)
    return libs


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def four_letter_word(port: int, word: str, timeout: float = 1.0) -> str:
    """ZooKeeper's four-letter-word admin command (`srvr`, `ruok`, ...) over a plain socket."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(word.encode())
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperServer:
    """One standalone ZooKeeper on 127.0.0.1.

    `tick_ms` bounds the session timeouts the server grants (2 to 20 ticks): 500 ms lets tests ask for
    sessions of 1 to 10 s. Without `data_dir` a temporary one is made and removed by `close()`; `stop()` and
    `start()` again keep port and data (a restart), `kill()` is SIGKILL.
    """

    def __init__(
        self,
        port: int | None = None,
        data_dir: Path | None = None,
        *,
        tick_ms: int = 500,
        version: str = ZOOKEEPER_VERSION,
        log_path: Path | None = None,
    ) -> None:
        self.port = port or free_port()
        self.tick_ms = tick_ms
        self.version = version
        self._owns_data = data_dir is None
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="kbroker-zk-"))
        self.log_path = log_path or self.data_dir / "zookeeper.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _config(self) -> Path:
        path = self.data_dir / "zoo.cfg"
        path.write_text(
            "\n".join(
                [
                    f"tickTime={self.tick_ms}",
                    f"dataDir={self.data_dir / 'data'}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=srvr,ruok,stat,cons",
                    "maxClientCnxns=0",
                    "",
                ]
            )
        )
        return path

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        libs = ensure_jars(self.version)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self._config()
        command = [
            "java",
            HEAP,
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            str(libs / "*"),
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(config),
        ]
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_serving(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_serving(self, timeout: float) -> None:
        """Until `srvr` answers with a mode: a server whose start failed half-way still accepts connections."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with code {self.process.returncode}: see {self.log_path}")
            with contextlib.suppress(OSError):
                if "Mode: standalone" in four_letter_word(self.port, "srvr"):
                    return
            time.sleep(0.1)
        raise TimeoutError(f"ZooKeeper not serving on {self.port} after {timeout}s: see {self.log_path}")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the server process (SIGTERM, then SIGKILL after 20 s); data and port stay for a restart."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def close(self) -> None:
        self.stop()
        if self._owns_data:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="resolve ZooKeeper's jars into the cache")
    run = sub.add_parser("run", help="run a standalone ZooKeeper until interrupted")
    run.add_argument("--port", type=int, default=2181)
    run.add_argument("--data-dir", type=Path, default=None)
    run.add_argument("--tick-ms", type=int, default=500)
    args = parser.parse_args(argv)
    if args.command == "fetch":
        print(ensure_jars())
        return 0
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server = ZooKeeperServer(args.port, args.data_dir, tick_ms=args.tick_ms, log_path=Path("/dev/stderr"))
    with server:
        print(f"ZooKeeper {server.version} serving on {server.connect_string}", flush=True)
        while not stop and server.running:
            time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
