"""A confluent-kafka ShareConsumer member speaking share_members.py's JSON lines (run as a child process)."""

from __future__ import annotations

import json
import sys
from typing import Any

from confluent_kafka import AcknowledgeType, ShareConsumer

ACK_TYPES = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}


def main() -> None:
    consumer: ShareConsumer | None = None
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        answer: dict[str, Any] = {"ok": True}
        try:
            op = request["op"]
            if op == "start":
                config = {
                    "bootstrap.servers": request["bootstrap"],
                    "group.id": request["group"],
                    "share.acknowledgement.mode": "explicit",
                    **request["configs"],
                }
                consumer = ShareConsumer(config)
                consumer.subscribe([request["topic"]])
            elif op == "poll":
                assert consumer is not None
                records = []
                for message in consumer.poll(request["timeout_ms"] / 1000):
                    if message.error():
                        continue
                    records.append(
                        {
                            "partition": message.partition(),
                            "offset": message.offset(),
                            "value": (message.value() or b"").decode(),
                            "delivery_count": message.delivery_count(),
                        }
                    )
                    if request["ack"] != "none":
                        consumer.acknowledge(message, ACK_TYPES[request["ack"]])
                if records and request["ack"] != "none":
                    consumer.commit_sync(10)
                answer["records"] = records
            elif op == "close":
                if consumer is not None:
                    consumer.close()
                    consumer = None
            else:
                raise ValueError(f"unknown op {op}")
        except Exception as error:  # reported to the test, which fails with it
            answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
