#!/usr/bin/env python3
"""W12, TLS side by side: Apache Kafka and kbroker in turn, each with a PLAINTEXT and an SSL listener (PEM
keystore, server authentication), the same load generator over each.

    .venv/bin/python scripts/bench/tls.py [--rounds 3] [--scale 1.0] [--unpinned]

Each round starts Kafka, runs the loads, stops it, then does the same with kbroker. Loads (franz-go,
scripts/bench/loadgen; `-tls-ca` makes every connection TLS 1.2+, the server's certificate checked):
- produce 256 Ki records of 1 KiB to 6 partitions, acks=1, linger 5 ms, batches up to 1 MiB, then read
  every record back from the start (the consume figure), once over SSL and once over PLAINTEXT, so each
  broker's cost of TLS shows beside the ratio between them;
- end to end over SSL at 2,000 records/s for 10 s (1 s untimed), 1 KiB, acks=all, linger 0.
The load generator fails on any lost, duplicated or reordered record. Brokers run on core 0, the load
generator on core 1, unless --unpinned. Prints medians (min-max) and the ratio kbroker/Kafka, in the table
of scripts/bench/run (docs/performance.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

from bench import load_average, note, run, side_by_side_options, side_by_side_setup, summarise, table  # noqa: E402
from brokers import Broker, Kafka, KBroker, environment_note  # noqa: E402
from workloads import Figure, Workload, build_loadgen, run_workload  # noqa: E402

from tests.broker.tls_support import make_certificates  # noqa: E402
from tests.ports import free_port  # noqa: E402

RECORDS = "262144"
THROUGHPUT = ("-mode", "batch", "-records", RECORDS, "-size", "1024", "-acks", "1", "-linger", "5ms")
LATENCY = ("-mode", "latency", "-rate", "2000", "-duration", "10s", "-size", "1024", "-acks", "all", "-linger", "0s")


def loads(ca: Path) -> list[tuple[str, Workload]]:
    """(listener, workload): what each round runs against each broker, in order."""
    tls = ("-tls-ca", str(ca))
    return [
        ("SSL", Workload("W12 ssl", "", (*THROUGHPUT, *tls), (
            Figure("W12 ssl produce", "W12 produce 1 KiB, acks=1, over TLS", "produce_mb_per_s", "MB/s",
                   target=">= 1.0x"),
            Figure("W12 ssl consume", "W12 consume from earliest, over TLS", "consume_mb_per_s", "MB/s",
                   target=">= 1.0x", phase="consume"),
        ))),
        ("PLAINTEXT", Workload("W12 plain", "", THROUGHPUT, (
            Figure("W12 plain produce", "W12 the same produce over PLAINTEXT", "produce_mb_per_s", "MB/s"),
            Figure("W12 plain consume", "W12 the same consume over PLAINTEXT", "consume_mb_per_s", "MB/s",
                   phase="consume"),
        ))),
        ("SSL", Workload("W12 e2e", "", (*LATENCY, *tls), (
            Figure("W12 ssl e2e p50", "W12 end-to-end p50 over TLS, 2,000 msgs/s, acks=all", "latency_p50_ms", "ms",
                   False),
            Figure("W12 ssl e2e p99", "W12 end-to-end p99 over TLS, 2,000 msgs/s, acks=all", "latency_p99_ms", "ms",
                   False, "<= Kafka"),
        ), scale_keys=())),
    ]  # fmt: skip


def ssl_settings(keystore: Path) -> dict[str, str]:
    """The SSL listener's settings, Kafka's names, the same for both brokers (PLAINTEXT stays first)."""
    return {
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": str(keystore),
        "listener.name.ssl.ssl.client.auth": "none",
    }


class TlsKafka(Kafka):
    def __init__(self, cpus: str, keystore: Path) -> None:
        self.ssl_port = free_port()
        super().__init__(cpus, ssl_settings(keystore))

    def _properties(self) -> str:
        plain, ssl, controller = self.port, self.ssl_port, self.controller_port
        self.settings |= {  # later lines of server.properties win
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl},CONTROLLER://127.0.0.1:{controller}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
        }
        return super()._properties()


class TlsKBroker(KBroker):
    def __init__(self, cpus: str, keystore: Path) -> None:
        self.ssl_port = free_port()
        super().__init__(cpus, ssl_settings(keystore))
        self.settings |= {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},SSL://127.0.0.1:{self.ssl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
        }

    def command(self) -> list[str]:
        command = super().command()
        at = command.index("--listen")
        return command[:at] + command[at + 2 :]  # the listeners setting names both


class Listener:
    """A broker seen through one of its listeners, for run_workload (which connects to `.bootstrap`)."""

    def __init__(self, broker: Broker, port: int) -> None:
        self.broker, self.name, self.process = broker, broker.name, broker.process
        self.bootstrap = f"127.0.0.1:{port}"

    def fsync_topic_configs(self) -> str:
        return self.broker.fsync_topic_configs()


Samples = dict[str, dict[str, list[float]]]


def one_broker(broker: TlsKafka | TlsKBroker, ca: Path, loadgen_cpus: str, scale: float, samples: Samples) -> None:
    try:
        broker.start()
        ports = {"PLAINTEXT": broker.port, "SSL": broker.ssl_port}
        # untimed: the JVM compiles its hot paths (TLS included), both brokers alike
        warm = Workload("warm-up", "", (*THROUGHPUT, "-tls-ca", str(ca)), ())
        run_workload(warm, Listener(broker, broker.ssl_port), loadgen_cpus, 0.25, "w12-warm")  # type: ignore[arg-type]
        for i, (listener, workload) in enumerate(loads(ca)):
            seen = Listener(broker, ports[listener])
            result = run_workload(workload, seen, loadgen_cpus, scale, f"w12-{i}")  # type: ignore[arg-type]
            shown = []
            for figure in workload.figures:
                samples[figure.name][broker.name].append(float(result[figure.key]))
                shown.append(f"{figure.name} {float(result[figure.key]):,.2f} {figure.unit}")
            note(f"{broker.name}: {workload.name} verified ({int(result['records']):,} records): " + ", ".join(shown))
    finally:
        broker.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    side_by_side_options(parser, "load generator")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the record counts (at most 1)")
    args = parser.parse_args(argv)
    build_loadgen()
    broker_cpus, loadgen_cpus = side_by_side_setup(args)
    started = time.monotonic()
    samples: Samples = defaultdict(lambda: defaultdict(list))
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as directory:
        certs = make_certificates(Path(directory))
        for round_no in range(1, args.rounds + 1):
            for name in args.brokers.split(","):
                note(f"round {round_no}/{args.rounds}: {name}")
                time.sleep(2.0)  # the previous broker's data deletion settles
                kind = TlsKafka if name == "kafka" else TlsKBroker
                one_broker(kind(broker_cpus, certs.server), certs.ca, loadgen_cpus, args.scale, samples)
    figures = {f.name: f for _, workload in loads(Path("ca")) for f in workload.figures}
    where = "unpinned" if args.unpinned else f"brokers on core {broker_cpus}, load generator on core {loadgen_cpus}"
    print()
    print(
        f"W12, {args.rounds} rounds, scale {args.scale}, {(time.monotonic() - started) / 60:.1f} min;"
        f" {where}; kbroker {args.kbroker_from}; {environment_note()}; load average {load_average()}"
    )
    print()
    print(table(summarise(samples, figures)))
    for name in ("kafka", "kbroker"):
        for phase in ("produce", "consume"):
            ssl, plain = samples[f"W12 ssl {phase}"].get(name), samples[f"W12 plain {phase}"].get(name)
            if ssl and plain:
                cost = statistics.median(ssl) / statistics.median(plain)
                note(f"{name}: {phase} over TLS at {cost:.2f}x its PLAINTEXT throughput")
    return 0


if __name__ == "__main__":
    run(main)
