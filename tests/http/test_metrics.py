"""/health, /ready and /metrics of a real broker under real client traffic, parsed with
prometheus_client's own text parser."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from tests.broker.conftest import batch_of, create_topic, fetch, produce, record_offsets, unique_topic
from tests.http.conftest import HttpBroker, http_get
from tests.process import RawClient


def scrape(broker: HttpBroker) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, body = http_get(f"{broker.url}/metrics")
    assert status == 200
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_health_and_ready(http_broker: HttpBroker) -> None:
    status, body = http_get(f"{http_broker.url}/health")
    assert (status, json.loads(body)) == (200, {"status": "up"})
    status, body = http_get(f"{http_broker.url}/ready")
    ready = json.loads(body)
    assert status == 200 and ready["status"] == "ready"
    assert ready["checks"]["group_coordinator"] and ready["checks"]["kafka_listener"]


def test_produce_requests_sizes_and_bytes_in(http_broker: HttpBroker) -> None:
    topic = unique_topic("metrics")
    with RawClient(http_broker.bootstrap) as client:
        create_topic(client, topic)
        before = scrape(http_broker)
        batches = [batch_of(3, value_size=100) for _ in range(5)]
        for batch in batches:
            assert produce(client, topic, batch)["error_code"] == 0
        fetched = fetch(client, [(topic, 0, 0)])["responses"][0]["partitions"][0]["records"]
        assert len(record_offsets(fetched)) == 15
        assert fetch(client, [(topic, 0, 15)])["responses"][0]["partitions"][0]["records"] in (b"", None)
    after = scrape(http_broker)
    assert value(after, "kbroker_topic_bytes_out_total", topic=topic) == sum(len(b) for b in batches)
    assert (
        value(after, "kbroker_requests_total", api="Fetch") - value(before, "kbroker_requests_total", api="Fetch") == 2
    )
    produced = value(after, "kbroker_requests_total", api="Produce") - value(
        before, "kbroker_requests_total", api="Produce"
    )
    assert produced == 5
    histogram = value(after, "kbroker_request_duration_seconds_count", api="Produce") - value(
        before, "kbroker_request_duration_seconds_count", api="Produce"
    )
    assert histogram == 5
    assert value(after, "kbroker_request_duration_seconds_bucket", api="Produce", le="+Inf") >= 5
    assert value(after, "kbroker_request_duration_seconds_sum", api="Produce") > 0
    assert value(after, "kbroker_topic_partitions", topic=topic) == 1
    assert value(after, "kbroker_log_end_offset", topic=topic, partition="0") == 15
    assert value(before, "kbroker_log_size_bytes", topic=topic, partition="0") == 0
    assert value(after, "kbroker_log_size_bytes", topic=topic, partition="0") == sum(len(b) for b in batches)
    assert value(after, "kbroker_topic_bytes_in_total", topic=topic) == sum(len(b) for b in batches)
    assert value(after, "kbroker_topic_records_in_total", topic=topic) == 15


def test_consumer_group_lag_and_connections(http_broker: HttpBroker) -> None:
    topic, group = unique_topic("lag"), unique_topic("group")
    with RawClient(http_broker.bootstrap) as client:
        create_topic(client, topic)
        for _ in range(4):
            assert produce(client, topic, batch_of(5))["error_code"] == 0
        consumer = Consumer(
            {"bootstrap.servers": http_broker.bootstrap, "group.id": group, "enable.auto.commit": False}
        )
        try:
            consumer.commit(offsets=[TopicPartition(topic, 0, 12)], asynchronous=False)
            samples = scrape(http_broker)
            assert value(samples, "kbroker_consumer_group_lag", group=group, topic=topic, partition="0") == 8
            assert value(samples, "kbroker_connections") >= 2  # this raw client and the consumer
            assert value(samples, "kbroker_requests_total", api="OffsetCommit") >= 1
            # a broker alone replicates nothing: no replication gauges (they come from brokers in a cluster)
            assert not [name for name, _ in samples if "replica" in name or name == "kbroker_leader_partitions"]
        finally:
            consumer.close()


def _healthcheck_command() -> str:
    """The python -c program of the Dockerfile's HEALTHCHECK, as Docker would run it."""
    from tests.process import REPO

    text = (REPO / "Dockerfile").read_text().replace("\\\n", "")
    line = next(line for line in text.splitlines() if line.startswith("HEALTHCHECK"))
    program = line.split('CMD python -c "', 1)[1]
    assert program.endswith('"')
    return program[:-1]


def test_dockerfile_healthcheck(http_broker: HttpBroker) -> None:
    import os
    import subprocess
    import sys

    from tests.process import free_port

    program = _healthcheck_command()
    base = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
    kafka = {"KBROKER_LISTEN": f"0.0.0.0:{http_broker.port}"}

    def run(env: dict[str, str]) -> int:
        return subprocess.run([sys.executable, "-c", program], env=base | env, capture_output=True).returncode

    assert run(kafka | {"KBROKER_HTTP_LISTEN": f"0.0.0.0:{http_broker.http_port}"}) == 0
    assert run(kafka | {"KBROKER_HTTP_LISTEN": f"0.0.0.0:{free_port()}"}) != 0  # nothing listens there
    assert run(kafka | {"KBROKER_HTTP_LISTEN": ""}) == 0  # no HTTP listener: the Kafka port is checked
    assert run({"KBROKER_LISTEN": f"0.0.0.0:{free_port()}", "KBROKER_HTTP_LISTEN": ""}) != 0
