#!/usr/bin/env python3
"""Apache Kafka as a reference broker: fetch its jars from Maven Central once, run a single KRaft node.

Usage from the command line::

    tests/kafka_ref.py fetch            # resolve the jars into the cache and print the classpath dir
    tests/kafka_ref.py tools            # resolve Kafka's command-line tools (kafka-tools) too
    tests/kafka_ref.py run --port 19092  # run until Ctrl-C / SIGTERM
    tests/kafka_ref.py exec -- CMD ...   # run CMD with KBROKER_BOOTSTRAP set to a fresh Kafka, then stop it

From Python::

    with KafkaRef(port=19092) as kafka:
        print(kafka.bootstrap)
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
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

if not __package__:  # run as a script: tests/ is on sys.path, the repository root is not
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.ports import free_port  # noqa: E402

KAFKA_VERSION = os.environ.get("KAFKA_REF_VERSION", "4.3.1")
SCALA_VERSION = "2.13"
CACHE_ROOT = Path(os.environ.get("KBROKER_CACHE", Path.home() / ".cache" / "kbroker"))
HEAP = "-Xmx512m"

POM_TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kbroker.ref</groupId>
  <artifactId>apache-kafka-ref</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_{scala}</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>2.24.3</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>2.24.3</version>
    </dependency>
  </dependencies>
</project>
"""

LOG4J2_CONFIG = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="stderr" target="SYSTEM_ERR">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="WARN"><AppenderRef ref="stderr"/></Root>
    <Logger name="kafka.server.KafkaRaftServer" level="INFO"/>
  </Loggers>
</Configuration>
"""


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    """The cache directory holding the jars of one Kafka version."""
    return CACHE_ROOT / f"apache-kafka-{version}"


@contextlib.contextmanager
def resolving(home: Path) -> Iterator[None]:
    """Hold the cache directory `home` alone while its jars are resolved: parallel test workers (or two
    checkouts) that need them at once resolve them once, the others wait and find them complete."""
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f"{home.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_jars(version: str = KAFKA_VERSION) -> Path:
    """Resolve Kafka's server jars with Maven into the cache, once; return the libs directory."""
    home = kafka_home(version)
    libs = home / "libs"
    marker = home / ".complete"
    with resolving(home):
        if marker.exists():
            return libs
        home.mkdir(parents=True, exist_ok=True)
        (home / "pom.xml").write_text(POM_TEMPLATE.format(scala=SCALA_VERSION, version=version))
        command = [
            "mvn",
            "-q",
            "-B",
            "-f",
            str(home / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={libs}",
            "-DincludeScope=runtime",
        ]
        subprocess.run(command, check=True)
        (home / "log4j2.xml").write_text(LOG4J2_CONFIG)
        marker.write_text(version + "\n")
    return libs


TOOLS_POM_TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kbroker.bench</groupId>
  <artifactId>kafka-tools-ref</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>{version}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
"""


def ensure_tools(version: str = KAFKA_VERSION) -> tuple[Path, Path]:
    """Resolve Kafka's command-line tools once (the cache scripts/bench/compare_generators shares).

    Returns two libs directories: kafka-tools' (org.apache.kafka.tools.*: TopicCommand, GetOffsetShell,
    LogDirsCommand, TransactionsCommand, FeatureCommand, ...) and the server's (kafka.admin.ConfigCommand,
    which lives in the kafka_2.13 jar).
    """
    server_libs = ensure_jars(version)
    home = CACHE_ROOT / f"kafka-tools-{version}"
    libs = home / "libs"
    marker = home / ".complete"
    with resolving(home):
        if not marker.exists():
            home.mkdir(parents=True, exist_ok=True)
            (home / "pom.xml").write_text(TOOLS_POM_TEMPLATE.format(version=version))
            command = ["mvn", "-q", "-B", "-f", str(home / "pom.xml"), "dependency:copy-dependencies"]
            subprocess.run([*command, f"-DoutputDirectory={libs}", "-DincludeScope=runtime"], check=True)
            marker.touch()
    return libs, server_libs


def wait_for_port(host: str, port: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    """Block until host:port accepts a TCP connection, or raise TimeoutError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with code {process.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")


class KafkaRef:
    """One Apache Kafka node (broker + controller, KRaft) on 127.0.0.1 with a temporary log dir."""

    def __init__(
        self,
        port: int | None = None,
        version: str = KAFKA_VERSION,
        log_path: Path | None = None,
        *,
        listeners: dict[str, str] | None = None,
        properties: dict[str, str] | list[str] | None = None,
        scram_users: list[tuple[str, str, str]] | None = None,
    ) -> None:
        """`listeners`: more client listeners, name -> security protocol, each on a free port
        (`listener_ports[name]`); `properties`: more server.properties, as name -> value or as lines
        (e.g. log.cleaner.backoff.ms); `scram_users`: (mechanism, user, password) SCRAM credentials
        written when the storage is formatted (`kafka-storage format --add-scram`, KIP-900), so they
        exist before the first client connects."""
        self.port = port or free_port()
        self.extra_listeners = dict(listeners or {})
        self.listener_ports = {name: free_port() for name in self.extra_listeners}
        if isinstance(properties, dict):
            self.extra_properties = [f"{name}={value}" for name, value in properties.items()]
        else:
            self.extra_properties = list(properties or [])
        self.scram_users = list(scram_users or [])
        self.controller_port = free_port()
        self.version = version
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _properties(self, log_dir: Path) -> str:
        extra = "".join(f",{name}://127.0.0.1:{self.listener_ports[name]}" for name in self.extra_listeners)
        protocols = "".join(f",{name}:{protocol}" for name, protocol in self.extra_listeners.items())
        return "\n".join(
            [
                "process.roles=broker,controller",
                "node.id=1",
                f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
                f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}{extra}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}{extra}",
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                f"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT{protocols}",
                f"log.dirs={log_dir}",
                # A single node cannot hold 3 replicas of the internal topics.
                "offsets.topic.replication.factor=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "share.coordinator.state.topic.replication.factor=1",
                "share.coordinator.state.topic.min.isr=1",
                "group.initial.rebalance.delay.ms=0",
                *self.extra_properties,
                "",
            ]
        )

    def _java(self, main_class: str, *args: str) -> list[str]:
        home = kafka_home(self.version)
        return [
            "java",
            HEAP,
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={home / 'log4j2.xml'}",
            f"-Dkafka.logs.dir={self._workdir}",
            "-cp",
            str(home / "libs" / "*"),
            main_class,
            *args,
        ]

    def start(self, timeout: float = 90.0) -> KafkaRef:
        ensure_jars(self.version)
        self._workdir = Path(tempfile.mkdtemp(prefix="kafka-ref-"))
        log_dir = self._workdir / "data"
        config = self._workdir / "server.properties"
        config.write_text(self._properties(log_dir))
        cluster_id = _cluster_id()
        scram = [
            arg
            for mechanism, user, password in self.scram_users
            for arg in ("--add-scram", f"{mechanism}=[name={user},password={password}]")
        ]
        subprocess.run(
            self._java("kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(config), *scram),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        self._launch(timeout)
        return self

    def _launch(self, timeout: float) -> None:
        assert self._workdir is not None
        config = self._workdir / "server.properties"
        out = open(self.log_path or self._workdir / "kafka.log", "ab")  # noqa: SIM115 - lives as long as the process
        self.process = subprocess.Popen(
            self._java("kafka.Kafka", str(config)), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        out.close()
        try:
            wait_for_port("127.0.0.1", self.port, timeout, self.process)
            for port in self.listener_ports.values():
                wait_for_port("127.0.0.1", port, timeout, self.process)
        except BaseException:
            self.stop()
            raise

    def restart_after_kill9(self, down_s: float = 0.5, timeout: float = 90.0) -> None:
        """SIGKILL the node, then start it again on the same ports and log directory (no clean shutdown)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        time.sleep(down_s)
        self._launch(timeout)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def __enter__(self) -> KafkaRef:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _cluster_id() -> str:
    """A random cluster id in Kafka's form: 16 bytes, url-safe base64 without padding."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@contextlib.contextmanager
def running_kafka(port: int | None = None) -> Iterator[KafkaRef]:
    """Context manager form, for pytest fixtures."""
    with KafkaRef(port=port) as kafka:
        yield kafka


def exec_against_kafka(port: int | None, command: list[str]) -> int:
    """Start Kafka, run ``command`` with KBROKER_BOOTSTRAP pointing at it, stop Kafka; the command's exit code."""
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise SystemExit("exec needs a command")
    started = time.monotonic()
    with KafkaRef(port=port) as kafka:
        print(f"Apache Kafka {kafka.version} on {kafka.bootstrap} (started in {time.monotonic() - started:.1f}s)")
        sys.stdout.flush()
        env = {**os.environ, "KBROKER_BOOTSTRAP": kafka.bootstrap}
        return subprocess.run(command, env=env).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="resolve the Kafka jars into the cache")
    sub.add_parser("tools", help="resolve Kafka's command-line tools into the cache")
    run = sub.add_parser("run", help="run a single-node Kafka until interrupted")
    run.add_argument("--port", type=int, default=19092)
    run_command = sub.add_parser("exec", help="run a command against a fresh Kafka (KBROKER_BOOTSTRAP is set)")
    run_command.add_argument("--port", type=int, default=None)
    run_command.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "fetch":
        print(ensure_jars())
        return 0
    if args.command == "tools":
        print(*ensure_tools(), sep="\n")
        return 0
    if args.command == "exec":
        return exec_against_kafka(args.port, args.argv)
    kafka = KafkaRef(port=args.port, log_path=Path("/dev/stderr"))
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with kafka:
        print(f"Apache Kafka {kafka.version} listening on {kafka.bootstrap}", flush=True)
        while not stop and kafka.process is not None and kafka.process.poll() is None:
            time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
