"""100,000 virtual queues on one data topic: published by a Kafka producer, each read over HTTP.

Prints the time taken and the broker's resident memory before and after (docs/gateway.md states them).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import aiohttp
import pytest
from confluent_kafka import Producer

from tests.http.conftest import HttpBroker, http_get

# KBROKER_TEST_VQ_QUEUES sets another count (a quick local run, a larger one).
QUEUES = int(os.environ.get("KBROKER_TEST_VQ_QUEUES", "100000"))
CONCURRENCY = 32


def rss_kib(pid: int) -> int:
    match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    assert match is not None
    return int(match.group(1))


@pytest.mark.timeout(300)  # 100,000 HTTP reads: under a minute on a loaded 2-core machine
def test_one_hundred_thousand_queues(tmp_path: Path) -> None:
    broker = HttpBroker(tmp_path / "data", "--config", "kbroker.vq.topic.partitions=8").start()
    try:
        assert broker.proc is not None
        status, _ = http_get(f"{broker.url}/v1/vq")  # nothing yet
        assert status == 200
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(f"{broker.url}/v1/vq/first", data=b"x", method="POST"))
        rss_before = rss_kib(broker.proc.pid)

        begin = time.monotonic()
        producer = Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random",
                             "linger.ms": 50, "batch.num.messages": 10000, "compression.type": "lz4"})  # fmt: skip
        for i in range(QUEUES):
            producer.produce("kbroker-vq", key=f"tenant-{i:06d}", value=f"job for {i}".encode())
            if i % 10000 == 0:
                producer.poll(0)
        assert producer.flush(60) == 0
        del producer  # no reconnection attempts while the broker restarts below
        produced_s = time.monotonic() - begin
        rss_after = rss_kib(broker.proc.pid)

        async def read_all() -> list[int]:
            failures: list[int] = []
            connector = aiohttp.TCPConnector(limit=CONCURRENCY)
            async with aiohttp.ClientSession(connector=connector) as session:
                numbers = iter(range(QUEUES))

                async def worker() -> None:
                    for i in numbers:
                        url = f"{broker.url}/v1/vq/tenant-{i:06d}/records?consumer=worker"
                        async with session.get(url) as response:
                            body = await response.json()
                        if [r["value"] for r in body.get("records", ())] != [f"job for {i}"]:
                            failures.append(i)

                await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
            return failures

        begin = time.monotonic()
        failures = asyncio.run(read_all())
        read_s = time.monotonic() - begin
        assert failures == []
        rss_read = rss_kib(broker.proc.pid)  # with the batch cache filled (decompressed records and their positions)

        begin = time.monotonic()
        status, body = http_get(f"{broker.url}/v1/vq?prefix=tenant-&limit={QUEUES}")
        list_s = time.monotonic() - begin
        assert status == 200 and body.count(b'"depth": 1') == QUEUES

        broker.stop()  # a clean stop writes the index checkpoint; the restart reads nothing again
        broker.start()
        loaded = [line for line in broker.log_text().splitlines() if "virtual_queues_loaded" in line][-1]
        assert f"queues={QUEUES + 1}" in loaded and "records_scanned=0" in loaded, loaded
        some = QUEUES * 54321 // 100000
        status, body = http_get(f"{broker.url}/v1/vq/tenant-{some:06d}/records?consumer=worker")
        assert status == 200 and f"job for {some}".encode() in body
        print(
            f"\n{QUEUES} queues: produced in {produced_s:.1f} s, each read over HTTP in {read_s:.1f} s "
            f"({QUEUES / read_s:.0f} reads/s), listed in {list_s:.1f} s; broker RSS {rss_before / 1024:.0f} MiB "
            f"-> {rss_after / 1024:.0f} MiB (+{(rss_after - rss_before) / QUEUES * 1024:.0f} bytes a queue), "
            f"{rss_read / 1024:.0f} MiB after the reads; "
            f"restart: {loaded.split('ms=')[-1]} ms to load the index"
        )
    finally:
        if broker.alive():
            broker.stop()
