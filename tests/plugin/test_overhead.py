"""What the fixtures cost a test: the reset before each test, and fixture to first acknowledged produce."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from confluent_kafka import Producer

from kbroker.testing import InProcessBroker


def first_ack(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    acked: list[object] = []
    producer.produce(topic, b"x", on_delivery=lambda err, msg: acked.append(err))
    producer.flush(10)
    assert acked == [None]


def test_reset_then_first_acknowledged_produce(kbroker: InProcessBroker) -> None:
    """The `kbroker` fixture's cost per test is one reset(); then a new confluent-kafka producer's first
    record (its topic auto-created) is acknowledged. Target: under 100 ms together."""
    resets, totals = [], []
    for i in range(7):
        started = time.perf_counter()
        kbroker.reset()
        reset_done = time.perf_counter()
        first_ack(kbroker.bootstrap, f"t{i}")
        totals.append(time.perf_counter() - started)
        resets.append(reset_done - started)
    reset_ms, total_ms = statistics.median(resets) * 1000, statistics.median(totals) * 1000
    print(f"reset {reset_ms:.1f} ms (median of 7), reset to first ack {total_ms:.1f} ms (median of 7)")
    assert reset_ms < 50
    assert total_ms < 250  # 100 ms is the target; the bound leaves room for a loaded machine


def test_new_broker_to_first_acknowledged_produce(kbroker_factory: Callable[..., InProcessBroker]) -> None:
    """kbroker_factory starts a broker of the test's own: start-up plus the first acknowledged produce."""
    kbroker_factory().stop()  # the first start in a process imports the broker's modules
    starts = []
    for _ in range(3):
        started = time.perf_counter()
        broker = kbroker_factory()
        first_ack(broker.bootstrap, "t")
        starts.append(time.perf_counter() - started)
        broker.stop()
    median_ms = statistics.median(starts) * 1000
    print(f"new broker to first ack {median_ms:.1f} ms (median of 3)")
    assert median_ms < 1000
