"""Virtual queues across a kill -9 of the broker: positions, deletions and the index survive; the index
restarts from its checkpoint and reads only the log's tail."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from tests.http.conftest import HttpBroker, http_json

JSON = "application/json"


def publish(broker: HttpBroker, queue: str, value: str) -> int:
    status, body = http_json("POST", f"{broker.url}/v1/vq/{queue}", value.encode(), content_type="text/plain")
    assert status == 200, body
    return int(body["offset"])


def read(broker: HttpBroker, queue: str, consumer: str) -> tuple[int, Any]:
    return http_json("GET", f"{broker.url}/v1/vq/{queue}/records?consumer={consumer}&max=1000")


def values(broker: HttpBroker, queue: str, consumer: str) -> list[str]:
    status, body = read(broker, queue, consumer)
    assert status == 200, body
    return [r["value"] for r in body["records"]]


def ack(broker: HttpBroker, queue: str, consumer: str, offset: int) -> None:
    status, body = http_json("POST", f"{broker.url}/v1/vq/{queue}/ack", {"consumer": consumer, "offset": offset},
                             content_type=JSON)  # fmt: skip
    assert status == 200, body


def loaded_line(broker: HttpBroker) -> str:
    return [line for line in broker.log_text().splitlines() if "virtual_queues_loaded" in line][-1]


def scanned(line: str) -> int:
    match = re.search(r"records_scanned=(\d+)", line)
    assert match is not None, line
    return int(match.group(1))


def test_kill_9_keeps_positions_and_the_index(tmp_path: Path) -> None:
    broker = HttpBroker(tmp_path / "data", "--config", "kbroker.vq.index.checkpoint.interval.ms=1000").start()
    try:
        a = [publish(broker, "alpha", f"a{i}") for i in range(40)]
        for i in range(10):
            publish(broker, "beta", f"b{i}")
        publish(broker, "gone", "g")
        ack(broker, "alpha", "c1", a[20])  # c1 has read a0..a19
        ack(broker, "beta", "c2", int(read(broker, "beta", "c2")[1]["next_offset"]))  # all of beta
        ack(broker, "alpha", "c3", a[5])
        assert http_json("DELETE", f"{broker.url}/v1/vq/alpha/consumers/c3")[0] == 204
        ack(broker, "gone", "c1", 0)
        assert http_json("DELETE", f"{broker.url}/v1/vq/gone")[0] == 200
        deadline = time.monotonic() + 10  # a checkpoint covering these
        while broker.log_text().count("vq_index_checkpoint_written") < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.5)
        tail = [publish(broker, "alpha", f"late{i}") for i in range(3)]
        assert broker.proc is not None
        broker.kill()

        broker.start()
        line = loaded_line(broker)
        assert scanned(line) <= len(tail), line  # the checkpoint, then the tail: not the whole log again
        assert values(broker, "alpha", "c1") == [f"a{i}" for i in range(20, 40)] + [f"late{i}" for i in range(3)]
        assert values(broker, "beta", "c2") == []
        assert len(values(broker, "alpha", "c3")) == 43  # deleted: starts from the beginning
        assert read(broker, "gone", "c1")[0] == 404
        status, listed = http_json("GET", f"{broker.url}/v1/vq")
        assert [q["queue"] for q in listed["queues"]] == ["alpha", "beta"]
        alpha = listed["queues"][0]
        assert alpha["depth"] == 43 and alpha["consumers"] == [{"consumer": "c1", "position": a[20], "lag": 23}]

        status, positions_topic = http_json("GET", f"{broker.url}/topics/__kbroker_vq_positions")
        assert status == 200 and positions_topic["configs"]["cleanup.policy"] == "compact"

        # positions and the index written just before a kill -9 survive it too
        ack(broker, "alpha", "c1", tail[1])
        publish(broker, "alpha", "last")
        broker.kill()
        broker.start()
        assert values(broker, "alpha", "c1") == ["late1", "late2", "last"]

        # a damaged checkpoint: the index is rebuilt from the whole data topic, with the same answers
        broker.stop()
        checkpoint = tmp_path / "data" / "vq-index.checkpoint"
        data = bytearray(checkpoint.read_bytes())
        data[20] ^= 0xFF
        checkpoint.write_bytes(bytes(data))
        broker.start()
        assert "vq_index_checkpoint_ignored" in broker.log_text()
        assert scanned(loaded_line(broker)) >= 55
        assert values(broker, "alpha", "c1") == ["late1", "late2", "last"]
        assert read(broker, "gone", "c1")[0] == 404
        assert [q["queue"] for q in http_json("GET", f"{broker.url}/v1/vq")[1]["queues"]] == ["alpha", "beta"]
    finally:
        if broker.alive():
            broker.stop()
