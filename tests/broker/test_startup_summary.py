"""Start-up logs one summary line for every partition's load, not a line per partition."""

from __future__ import annotations

import re
from pathlib import Path

from tests.broker.conftest import batch_of, create_topic, produce, unique_topic
from tests.process import BrokerProcess, RawClient


def _fields(line: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S+)", line))


def test_one_summary_line_after_an_unclean_stop(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, "--config", "num.partitions=4").start()
    topics = [unique_topic("startup") for _ in range(3)]
    produced = 0
    try:
        with RawClient(broker.bootstrap) as client:
            for topic in topics:
                create_topic(client, topic)
                for partition in range(4):
                    batch = batch_of(5, value_size=50)
                    assert produce(client, topic, batch, partition=partition)["error_code"] == 0
                    produced += len(batch)
    finally:
        broker.kill()
    log_start = len(broker.log_text())
    restarted = BrokerProcess(data, port=broker.port).start()
    try:
        text = restarted.log_text()[log_start:]
    finally:
        restarted.stop()
    assert "log_recovered" not in text  # nothing was damaged: no line per partition
    (summary,) = [line for line in text.splitlines() if "event=log_manager_started" in line]
    fields = _fields(summary)
    assert fields["clean_shutdown"] == "false"
    assert fields["topics"] == "3" and fields["partitions"] == "12"
    assert fields["partitions_recovered"] == "12"
    assert int(fields["bytes_recovered"]) == produced == int(fields["bytes"])
    assert float(fields["duration_ms"]) > 0
