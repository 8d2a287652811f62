"""Fetch as the broker answers it, below any client: long poll on an empty partition, out-of-range offsets.

These do not depend on a client, so they run once, not once per client.
"""

from __future__ import annotations

import time

import pytest

from tests.compat.clients.adapter import Record
from tests.compat.clients.apiversions import missing_apis
from tests.compat.clients.wire import FetchError, fetch_batches
from tests.compat.support import Compat

OFFSET_OUT_OF_RANGE = 1


@pytest.fixture
def wire(bootstrap: str, advertised: dict[int, tuple[int, int]]) -> Compat:
    absent = missing_apis(advertised, {"Fetch", "Metadata", "CreateTopics", "Produce"})
    if absent:
        pytest.skip(f"broker does not implement {', '.join(absent)} yet")
    return Compat(bootstrap=bootstrap, advertised=advertised, subject="no client: raw requests")


def test_fetch_on_empty_partition_waits_max_wait_ms(wire: Compat) -> None:
    topic = wire.setup_topic("wire-wait")
    fetch_batches(wire.bootstrap, topic, max_wait_ms=0)  # the partition is ready (Kafka elects its leader async)
    started = time.monotonic()
    assert fetch_batches(wire.bootstrap, topic, max_wait_ms=600) == []
    elapsed = time.monotonic() - started
    assert 0.5 <= elapsed < 3.0, f"an empty Fetch with max_wait_ms=600 came back after {elapsed:.2f}s"


def test_fetch_wakes_when_a_record_arrives(wire: Compat) -> None:
    topic = wire.setup_topic("wire-wake")
    later = wire.produce_later(topic, [Record(b"k", b"v")], delay_s=0.5)
    batches = fetch_batches(wire.bootstrap, topic, max_wait_ms=5000)
    returned = time.monotonic()
    acked = later.join()
    assert [(base, count) for base, count, _ in batches] == [(0, 1)]
    assert returned - acked < 1.0, f"Fetch returned {returned - acked:.2f}s after the record was acknowledged"


def test_fetch_beyond_the_end_is_offset_out_of_range(wire: Compat) -> None:
    topic = wire.setup_topic("wire-range")
    wire.setup_produce(topic, [Record(b"k", b"v")])
    assert [(base, count) for base, count, _ in fetch_batches(wire.bootstrap, topic, offset=1, max_wait_ms=0)] == []
    with pytest.raises(FetchError) as failure:
        fetch_batches(wire.bootstrap, topic, offset=2, max_wait_ms=0)
    assert failure.value.code == OFFSET_OUT_OF_RANGE
