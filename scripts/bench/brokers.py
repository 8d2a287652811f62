"""The two brokers of the side-by-side benchmark, started alike: fresh data dir, pinned to one core.

Apache Kafka runs as `kafka-server-start.sh` would run it (its default heap and GC options), single
node, KRaft combined mode, default broker settings apart from what one node needs (replication
factor 1 for the internal topics). kbroker runs with its defaults.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent.parent
REPO = SCRIPTS.parent
sys.path.insert(0, str(REPO))

from tests.kafka_ref import KAFKA_VERSION, ensure_jars, kafka_home  # noqa: E402
from tests.ports import free_port  # noqa: E402

# kafka-server-start.sh's KAFKA_HEAP_OPTS and kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS.
KAFKA_JVM_OPTS = [
    "-Xmx1G",
    "-Xms1G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
]
PYCACHE = Path.home() / ".cache" / "kbroker" / "pycache"
INSTALLED = Path.home() / ".cache" / "kbroker" / "bench-install"  # a wheel of this checkout in its own venv
API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"


def first_api_versions_answer(port: int, deadline: float, process: subprocess.Popen[bytes]) -> None:
    """Poll until the broker answers an ApiVersions v0 request on port (or raise)."""
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"broker exited with code {process.returncode} before answering")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
                if len(sock.recv(4)) == 4:
                    return
        except OSError:
            time.sleep(0.002)
    raise TimeoutError(f"no ApiVersions answer on {port}")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class Broker:
    """Base: a broker process on 127.0.0.1:port with its own temporary directory."""

    name = "broker"

    def __init__(self, cpus: str, settings: dict[str, str] | None = None) -> None:
        self.cpus = cpus
        self.settings = dict(settings or {})  # broker settings besides the defaults, Kafka's names
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"bench-{self.name}-"))
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_ms = 0.0
        self.started_unix_ms = 0.0  # wall clock at the last start's exec (to compare with the load generator's)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def start(self, timeout: float = 120.0) -> Broker:
        """Start the process and wait for its first ApiVersions answer; records startup_ms."""
        log = open(self.workdir / "broker.log", "ab")  # noqa: SIM115 - the child keeps it
        started = time.monotonic()
        self.started_unix_ms = time.time() * 1000
        self.process = subprocess.Popen(
            ["taskset", "-c", self.cpus, *self.command()],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=self.environment(),
            start_new_session=True,
        )
        log.close()
        first_api_versions_answer(self.port, started + timeout, self.process)
        self.startup_ms = (time.monotonic() - started) * 1000
        return self

    def rss_mib(self) -> float:
        assert self.process is not None
        return rss_mib(self.process.pid)

    def data_dir(self) -> Path:
        """The log directory (Kafka's log.dirs, kbroker's --data-dir)."""
        return self.workdir / "data"

    def kill(self) -> None:
        """An unclean stop (SIGKILL)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def fsync_topic_configs(self) -> str:
        """Topic configs that make every acknowledged acks=all write durable (W6)."""
        raise NotImplementedError


class Kafka(Broker):
    name = "kafka"

    def __init__(self, cpus: str, settings: dict[str, str] | None = None) -> None:
        super().__init__(cpus, settings)
        ensure_jars(KAFKA_VERSION)
        self.controller_port = free_port()
        self.config = self.workdir / "server.properties"
        self.config.write_text(self._properties())
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        try:  # "--cluster-id=": an id may start with "-"
            subprocess.run(
                self._java("kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(self.config)),
                check=True,
                stdout=subprocess.DEVNULL,
            )
        except BaseException:
            self.cleanup()
            raise

    def _properties(self) -> str:
        return "\n".join(
            [
                "process.roles=broker,controller",
                "node.id=1",
                f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
                f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                f"log.dirs={self.workdir / 'data'}",
                "offsets.topic.replication.factor=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "share.coordinator.state.topic.replication.factor=1",
                "share.coordinator.state.topic.min.isr=1",
                *(f"{key}={value}" for key, value in self.settings.items()),
                "",
            ]
        )

    def _java(self, main_class: str, *args: str) -> list[str]:
        home = kafka_home(KAFKA_VERSION)
        return [
            "java",
            *KAFKA_JVM_OPTS,
            f"-Dlog4j2.configurationFile={home / 'log4j2.xml'}",
            f"-Dkafka.logs.dir={self.workdir}",
            "-cp",
            str(home / "libs" / "*"),
            main_class,
            *args,
        ]

    def command(self) -> list[str]:
        return self._java("kafka.Kafka", str(self.config))

    def fsync_topic_configs(self) -> str:
        return "flush.messages=1"


def install_kbroker(target: Path = INSTALLED) -> Path:
    """Build a wheel of this checkout and install it into a fresh venv at `target`, as a user installs
    kbroker (bytecode compiled at install, no editable-install finder, the checkout not on sys.path);
    its dependencies are those of the venv running this script (the checkout's .venv), reached through a
    path entry that does not run that venv's .pth files (its editable-install finder). Returns the installed `kbroker` script."""
    python = sys.executable  # the checkout's .venv, which runs the benchmark
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    wheels = target / "wheel"
    subprocess.run(
        [python, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, REPO],
        check=True,
        cwd=target,
    )
    shutil.rmtree(REPO / "build", ignore_errors=True)  # setuptools' staging directory
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", target / "venv"], check=True)
    venv_python = target / "venv" / "bin" / "python"
    wheel = next(wheels.glob("kbroker-*.whl"))
    subprocess.run(
        [python, "-m", "pip", "--python", venv_python, "install", "--no-deps", "-q", wheel],
        check=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )
    dependencies = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True
    ).stdout.strip()
    purelib = subprocess.run(
        [venv_python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True
    ).stdout.strip()
    (Path(purelib) / "bench-dependencies.pth").write_text(dependencies + "\n")
    return target / "venv" / "bin" / "kbroker"


class KBroker(Broker):
    name = "kbroker"
    installed: Path | None = None  # the `kbroker` script of an installed wheel (install_kbroker); None: this checkout

    def __init__(self, cpus: str, settings: dict[str, str] | None = None, log_level: str = "warning") -> None:
        super().__init__(cpus, settings)
        self.log_level = log_level

    def command(self) -> list[str]:
        program = [str(REPO / ".venv" / "bin" / "python"), "-m", "kbroker"]
        return [
            *([str(KBroker.installed)] if KBroker.installed is not None else program),
            "serve",
            "--listen",
            self.bootstrap,
            "--data-dir",
            str(self.workdir / "data"),
            "--log-level",
            self.log_level,
            "--log-format",
            "json",
            *(arg for key, value in self.settings.items() for arg in ("--config", f"{key}={value}")),
        ]

    def environment(self) -> dict[str, str]:
        """As an installed Python program runs: with cached bytecode (pip writes .pyc files at install; for
        the checkout they are cached once).

        This sandbox sets PYTHONDONTWRITEBYTECODE=1, which would make every start compile ~140
        modules from source (~100 ms); the cache goes to ~/.cache/kbroker/pycache, not the checkout.
        """
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if KBroker.installed is None:
            env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
        else:  # the .pyc files pip wrote next to the installed modules
            env.pop("PYTHONPYCACHEPREFIX", None)
        return env

    def fsync_topic_configs(self) -> str:
        return "kbroker.fsync.before.ack=true"

    def start_summaries(self) -> list[dict[str, Any]]:
        """The log_manager_started events of the broker's log so far: one a start, with the bytes its
        recovery scanned (bytes_recovered) and how long loading the logs took (duration_ms)."""
        events = []
        for line in (self.workdir / "broker.log").read_text(errors="replace").splitlines():
            if '"log_manager_started"' in line:
                events.append(json.loads(line))
        return events


def environment_note() -> str:
    """Python and Java versions, for the record."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    return f"Python {sys.version.split()[0]}, {java}, Apache Kafka {KAFKA_VERSION}, {os.cpu_count()} cores"
