"""Scenario 8: a consumer waiting on an empty partition gets a record produced 1 s later within 1.5 s."""

from __future__ import annotations

import time

from tests.compat.clients.adapter import Record
from tests.compat.support import Compat


def test_long_poll_wakes_on_produce(compat: Compat) -> None:
    compat.need(ops=("consume",), caps=("long_poll",))
    topic = compat.setup_topic("long-poll")
    later = compat.produce_later(topic, [Record(b"k", b"wake-up")], delay_s=1.0)
    started = time.monotonic()
    result = compat.client.consume(compat.bootstrap, topic, [0], "earliest", 1, timeout_s=10)
    returned = time.monotonic()
    acked = later.join()
    assert result.error is None, result.error_message
    assert [r.value for r in result.records] == [b"wake-up"]
    assert returned - started < 1.0 + 1.5 + 1.0, "the consumer took too long overall"
    assert returned - acked < 1.5, f"record reached the consumer {returned - acked:.2f}s after it was acknowledged"
