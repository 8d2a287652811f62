#!/usr/bin/env python3
"""W13, a queue consumer side by side: records acknowledged one by one from a share group (KIP-932),
on Apache Kafka and on kbroker, and through kbroker's WebSocket gateway (which Kafka has no counterpart of).

    .venv/bin/python scripts/bench/queue.py [--rounds 3] [--records 50000] [--unpinned]

Each round starts Kafka, then kbroker (with an HTTP listener), each on a fresh data directory. On each: a
topic of one partition, RECORDS records of 100 bytes written by Kafka's ProducerPerformance, then each
consumer below reads all of them in its own share group, reset to the earliest offset first with Kafka's
ShareGroupCommand (a new share group starts at the end). The figure is records/s from the first record
received to the last acknowledgement made (the share-group join and the JVM's start are not counted).

- Q1 a Java KafkaShareConsumer (Kafka 4.3.1's client), explicit acknowledgement of every record,
  the acknowledgements travelling with the next poll;
- Q2 the same, with commitSync after each poll's records (each poll's acknowledgements durable before the
  next poll);
- Q3 (kbroker only) one WebSocket consumer (aiohttp), credit 500, an `ack` frame per message;
- Q4 (kbroker only) the same, settling what has arrived with one `ack` frame of `ids` at a time.

Brokers run on core 0 and the consumers on core 1, unless --unpinned. Prints medians (min-max) and the ratio
kbroker/Kafka, in the table of scripts/bench/run (docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import load_average, note, run, side_by_side_options, side_by_side_setup, summarise, table  # noqa: E402
from brokers import Broker, Kafka, KBroker, environment_note  # noqa: E402
from gateway import wait_ready  # noqa: E402
from workloads import Figure  # noqa: E402

from tests.kafka_ref import ensure_tools  # noqa: E402
from tests.ports import free_port  # noqa: E402

SHARE_ACK = Path(__file__).resolve().parent / "queue" / "ShareAck.java"
FIGURES = {
    "Q1": Figure("Q1", "Q1 Java share consumer, explicit ack per record, sent with the next poll", "", "records/s"),
    "Q2": Figure("Q2", "Q2 the same, commitSync after each poll", "", "records/s"),
    "Q3": Figure("Q3", "Q3 WebSocket gateway, an ack frame per message (kbroker only)", "", "records/s"),
    "Q4": Figure("Q4", "Q4 WebSocket gateway, one ack frame of ids per arrival (kbroker only)", "", "records/s"),
}
Samples = dict[str, dict[str, list[float]]]


class GatewayKBroker(KBroker):
    def __init__(self, cpus: str) -> None:
        self.http_port = free_port()
        super().__init__(cpus, {"kbroker.http.listeners": f"http://127.0.0.1:{self.http_port}"})


class Tools:
    """Kafka's command-line tools and client on one classpath, run on the consumers' cores."""

    def __init__(self, cpus: str) -> None:
        libs, _ = ensure_tools()
        self.prefix = ["taskset", "-c", cpus, "java", "-Xmx512m", "-cp", f"{libs}/*"]

    def run(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run([*self.prefix, *args], capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} exited with {done.returncode}: {done.stderr.strip()[-2000:]}")
        return done.stdout

    def prepare(self, bootstrap: str, topic: str, records: int) -> None:
        self.run("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--create",
                 "--topic", topic, "--partitions", "1")  # fmt: skip
        self.run("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(records),
                 "--record-size", "100", "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
                 "linger.ms=5", "batch.size=65536")  # fmt: skip

    def reset(self, bootstrap: str, group: str, topic: str) -> None:
        self.run("org.apache.kafka.tools.consumer.group.ShareGroupCommand", "--bootstrap-server", bootstrap,
                 "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")  # fmt: skip

    def share_ack(self, bootstrap: str, topic: str, group: str, records: int, mode: str) -> tuple[float, str]:
        out = self.run(str(SHARE_ACK), bootstrap, topic, group, str(records), mode)
        result = json.loads(out.strip().splitlines()[-1])
        if result["records"] != records:
            raise RuntimeError(f"the share consumer saw {result['records']} of {records} records")
        return float(result["records"] / result["seconds"]), f" ({result['polls']} polls returned records)"


async def websocket(http_port: int, topic: str, group: str, records: int, batched: bool) -> float:
    """Q3/Q4: records/s from the first message to the last acknowledgement answered (answered: durable)."""
    url = f"http://127.0.0.1:{http_port}/v1/queues/ws?group={group}&topics={topic}"
    seen: set[int] = set()
    sent = settled = 0  # ack frames sent, and answered
    pending: list[str] = []  # Q4: ids received and not yet acknowledged
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:

        async def acknowledge(ids: list[str]) -> None:
            nonlocal sent
            frame = {"type": "ack", "ids": ids} if len(ids) > 1 else {"type": "ack", "id": ids[0]}
            await ws.send_str(json.dumps(frame))
            sent += 1

        welcome = json.loads((await ws.receive(timeout=60)).data)
        if welcome.get("type") != "welcome":
            raise RuntimeError(f"the gateway answered {welcome}")
        await ws.send_str(json.dumps({"type": "credit", "n": 500}))
        started = 0.0
        while len(seen) < records or settled < sent or pending:
            try:  # Q4 settles what has arrived once the gateway pauses (2 ms) or half the credit is held
                message = await ws.receive(timeout=0.002 if pending else 60)
            except TimeoutError:
                await acknowledge(pending)
                pending = []
                continue
            frame = json.loads(message.data)
            if frame["type"] == "settled":
                if frame.get("error") or frame.get("errors"):
                    raise RuntimeError(f"an acknowledgement was refused: {frame}")
                settled += 1
            elif frame["type"] == "message":
                if not seen:
                    started = time.perf_counter()
                seen.add(frame["offset"])
                if not batched:
                    await acknowledge([frame["id"]])
                else:
                    pending.append(frame["id"])
                    if len(pending) >= 250 or len(seen) == records:
                        await acknowledge(pending)
                        pending = []
            elif frame["type"] == "error":
                raise RuntimeError(f"the gateway sent {frame}")
        elapsed = time.perf_counter() - started
    if seen != set(range(records)):
        raise RuntimeError(f"the WebSocket consumer saw {len(seen)} distinct records of {records}")
    return records / elapsed


def one_broker(broker: Broker, tools: Tools, records: int, round_no: int, samples: Samples) -> None:
    try:
        broker.start()
        bootstrap, topic = broker.bootstrap, f"queue-{round_no}"
        tools.prepare(bootstrap, topic, records)
        runs: list[tuple[str, str]] = [("Q1", "poll"), ("Q2", "commit")]
        if isinstance(broker, GatewayKBroker):
            assert broker.process is not None
            wait_ready(f"http://127.0.0.1:{broker.http_port}", broker.process)
            runs += [("Q3", "ws"), ("Q4", "ws-ids")]
        for figure, mode in runs:
            group = f"{figure.lower()}-{round_no}"
            tools.reset(bootstrap, group, topic)
            detail = ""
            if mode.startswith("ws"):
                assert isinstance(broker, GatewayKBroker)
                rate = asyncio.run(websocket(broker.http_port, topic, group, records, mode == "ws-ids"))
            else:
                rate, detail = tools.share_ack(bootstrap, topic, group, records, mode)
            samples[figure][broker.name].append(rate)
            note(f"{broker.name}: {FIGURES[figure].label}: {rate:,.0f} records/s{detail}")
    finally:
        broker.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    side_by_side_options(parser, "consumers")
    parser.add_argument("--records", type=int, default=50_000)
    args = parser.parse_args(argv)
    broker_cpus, client_cpus = side_by_side_setup(args)
    tools = Tools(client_cpus)
    first, _, last = client_cpus.partition("-")
    os.sched_setaffinity(0, range(int(first), int(last or first) + 1))  # where the WebSocket consumer runs
    started = time.monotonic()
    samples: Samples = defaultdict(lambda: defaultdict(list))
    for round_no in range(1, args.rounds + 1):
        for name in args.brokers.split(","):
            note(f"round {round_no}/{args.rounds}: {name}")
            time.sleep(2.0)  # the previous broker's data deletion settles
            broker: Broker = Kafka(broker_cpus) if name == "kafka" else GatewayKBroker(broker_cpus)
            one_broker(broker, tools, args.records, round_no, samples)
    where = "unpinned" if args.unpinned else f"brokers on core {broker_cpus}, consumers on core {client_cpus}"
    print()
    print(
        f"W13, {args.rounds} rounds, {args.records:,} records of 100 B, {(time.monotonic() - started) / 60:.1f} min;"
        f" {where}; kbroker {args.kbroker_from}; {environment_note()}; load average {load_average()}"
    )
    print()
    print(table(summarise(samples, FIGURES)))
    return 0


if __name__ == "__main__":
    run(main)
