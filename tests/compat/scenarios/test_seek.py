"""Scenario 5: seek to an arbitrary offset; an out-of-range offset handled per auto.offset.reset."""

from __future__ import annotations

import pytest

from tests.compat.clients.adapter import Record
from tests.compat.support import Compat, assert_dense

COUNT = 20


def seeded_topic(compat: Compat, scenario: str) -> str:
    topic = compat.setup_topic(scenario)
    compat.setup_produce(topic, [Record(f"k{i}".encode(), f"v{i}".encode()) for i in range(COUNT)])
    return topic


def test_seek_to_offset(compat: Compat) -> None:
    compat.need(ops=("consume",))
    topic = seeded_topic(compat, "seek")
    result = compat.client.consume(compat.bootstrap, topic, [0], {0: 7}, 5, timeout_s=20)
    assert result.error is None, result.error_message
    assert_dense(result.records, start=7)
    assert [r.value for r in result.records] == [f"v{i}".encode() for i in range(7, 12)]


def test_out_of_range_resets_to_earliest(compat: Compat) -> None:
    compat.need(ops=("consume",))
    topic = seeded_topic(compat, "oor-earliest")
    result = compat.client.consume(compat.bootstrap, topic, [0], {0: 1000}, 3, timeout_s=20, reset="earliest")
    assert result.error is None, result.error_message
    assert [r.offset for r in result.records] == [0, 1, 2]


def test_out_of_range_resets_to_latest(compat: Compat) -> None:
    compat.need(ops=("consume",), caps=("long_poll",))
    topic = seeded_topic(compat, "oor-latest")
    # Records keep arriving every second, so the consumer sees one whenever its reset to the end happens.
    later = compat.produce_later(topic, [Record(b"late", b"after-reset")], delay_s=1.0, repeat=True)
    result = compat.client.consume(compat.bootstrap, topic, [0], {0: 1000}, 1, timeout_s=15, reset="latest")
    later.join()
    assert result.error is None, result.error_message
    assert [r.value for r in result.records] == [b"after-reset"]
    assert result.records[0].offset >= COUNT, "reset to the end, not to the start"


@pytest.mark.timeout(120)
def test_out_of_range_without_reset_fails(compat: Compat) -> None:
    compat.need(ops=("consume",), caps=("consume.reset_none",))
    topic = seeded_topic(compat, "oor-none")
    result = compat.client.consume(compat.bootstrap, topic, [0], {0: 1000}, 1, timeout_s=10, reset="none")
    assert result.records == []
    assert result.error == "offset_out_of_range", (
        f"expected OFFSET_OUT_OF_RANGE, got {result.error}: {result.error_message}"
    )
