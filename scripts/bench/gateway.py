#!/usr/bin/env python3
"""HTTP gateway benchmark (not a test): a real kbroker with --http-listen on a temporary data dir.

G1  REST produce: records/s through POST /topics/{t} (json, `--batch` records per request,
    `--clients` concurrent aiohttp clients)
G2  WebSocket queue: messages/s through one consumer that acknowledges each message (credit 500)
G3  latency from a REST produce of one record to its delivery on a WebSocket consumer: p50, p99
G4  virtual queue: records/s published one per POST /v1/vq/{queue} (`--clients` concurrent), then
    records/s read by a named consumer (GET .../records?max=100, then an ack of next_offset)

  .venv/bin/python scripts/bench/gateway.py [--records 20000] [--batch 100] [--clients 4] [--vq-records 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[2]
JSON = "application/vnd.kafka.json.v2+json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("kbroker exited")
        try:
            with urllib.request.urlopen(f"{url}/ready", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError("kbroker not ready")


async def rest_produce(url: str, topic: str, records: int, batch: int, clients: int) -> float:
    body = json.dumps({"records": [{"value": {"n": i, "pad": "x" * 80}} for i in range(batch)]})
    per_client = records // batch // clients

    async def client(session: aiohttp.ClientSession) -> None:
        for _ in range(per_client):
            async with session.post(f"{url}/topics/{topic}", data=body, headers={"Content-Type": JSON}) as r:
                assert r.status == 200, await r.text()
                await r.read()

    async with aiohttp.ClientSession() as session:
        started = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return per_client * clients * batch / elapsed


async def ws_consume(url: str, topic: str, produce_count: int, batch: int) -> float:
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(f"{url}/v1/queues/ws?group=bench-ws&topics={topic}")
        await ws.receive()  # welcome
        await ws.send_str(json.dumps({"type": "credit", "n": 500}))
        await asyncio.sleep(0.5)  # the share partitions start at the log end
        await rest_produce(url, topic, produce_count, batch, 2)
        started = time.perf_counter()
        received = 0
        while received < produce_count:
            frame = json.loads((await ws.receive()).data)
            if frame["type"] == "message":
                received += 1
                await ws.send_str(json.dumps({"type": "ack", "id": frame["id"]}))
        elapsed = time.perf_counter() - started
        await ws.close()
    return received / elapsed


async def produce_to_delivery(url: str, topic: str, samples: int) -> list[float]:
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(f"{url}/v1/queues/ws?group=bench-latency&topics={topic}")
        await ws.receive()
        await ws.send_str(json.dumps({"type": "credit", "n": 10}))
        await asyncio.sleep(0.5)
        latencies = []
        for i in range(samples):
            body = json.dumps({"records": [{"value": {"i": i}}]})
            started = time.perf_counter()
            async with session.post(f"{url}/topics/{topic}", data=body, headers={"Content-Type": JSON}) as r:
                await r.read()
            while True:
                frame = json.loads((await ws.receive()).data)
                if frame["type"] == "message":
                    break
            latencies.append(time.perf_counter() - started)
            await ws.send_str(json.dumps({"type": "ack", "id": frame["id"]}))
        await ws.close()
    return latencies


async def virtual_queue(url: str, records: int, clients: int) -> tuple[float, float]:
    async with aiohttp.ClientSession() as session:
        per_client = records // clients

        async def publisher(n: int) -> None:
            for i in range(per_client):
                async with session.post(f"{url}/v1/vq/bench", data=f"job {n}-{i}".encode()) as r:
                    assert r.status == 200, await r.text()
                    await r.read()

        started = time.perf_counter()
        await asyncio.gather(*(publisher(n) for n in range(clients)))
        published = per_client * clients / (time.perf_counter() - started)
        started = time.perf_counter()
        read = 0
        while read < per_client * clients:
            async with session.get(f"{url}/v1/vq/bench/records?consumer=worker&max=100") as r:
                body = await r.json()
            read += len(body["records"])
            ack = {"consumer": "worker", "offset": body["next_offset"]}
            async with session.post(f"{url}/v1/vq/bench/ack", json=ack) as r:
                assert r.status == 200, await r.text()
        return published, read / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--ws-messages", type=int, default=5000)
    parser.add_argument("--latency-samples", type=int, default=300)
    parser.add_argument("--vq-records", type=int, default=5000)
    args = parser.parse_args()
    port, http_port = free_port(), free_port()
    url = f"http://127.0.0.1:{http_port}"
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "kbroker", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", f"{tmp}/data",
               "--http-listen", f"127.0.0.1:{http_port}", "--config", "num.partitions=1"]  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(url, proc)
            for topic in ("g1", "g2", "g3"):  # created by a Metadata request (auto.create.topics.enable)
                subprocess.run(["kcat", "-b", f"127.0.0.1:{port}", "-L", "-t", topic], capture_output=True, check=False)
            rate = asyncio.run(rest_produce(url, "g1", args.records, args.batch, args.clients))
            print(f"G1 REST produce ({args.batch} records/request, {args.clients} clients): {rate:,.0f} records/s")
            rate = asyncio.run(ws_consume(url, "g2", args.ws_messages, args.batch))
            print(f"G2 WebSocket consumer with an ack per message: {rate:,.0f} messages/s")
            latencies = sorted(asyncio.run(produce_to_delivery(url, "g3", args.latency_samples)))
            p50 = statistics.median(latencies) * 1000
            p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000
            print(
                f"G3 REST produce -> WebSocket delivery ({len(latencies)} samples): p50 {p50:.1f} ms, p99 {p99:.1f} ms"
            )
            published, consumed = asyncio.run(virtual_queue(url, args.vq_records, args.clients))
            print(
                f"G4 virtual queue: {published:,.0f} records/s published (one per request, {args.clients} clients), "
                f"{consumed:,.0f} records/s read by a named consumer (100 per read, one ack per read)"
            )
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
