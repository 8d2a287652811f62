"""Produce with acks=1 and acks=0 (acks=all is scenario 2): every record arrives, in order."""

from __future__ import annotations

import pytest

from tests.compat.clients.adapter import Record
from tests.compat.support import Compat, assert_dense

COUNT = 50


@pytest.mark.parametrize("acks", ["1", "0"])
def test_produce_acks(compat: Compat, acks: str) -> None:
    compat.need(ops=("produce", "consume"), caps=(f"acks.{acks}",))
    topic = compat.setup_topic(f"acks-{acks}")
    records = [Record(f"k{i}".encode(), f"v{i}".encode()) for i in range(COUNT)]
    produced = compat.client.produce(compat.bootstrap, topic, records, acks=acks)
    if acks == "1":
        assert [o for _, o in produced if o >= 0] in ([], list(range(COUNT)))
    result = compat.client.consume(compat.bootstrap, topic, [0], "earliest", COUNT, timeout_s=20)
    assert result.error is None, result.error_message
    assert_dense(result.records)
    assert [r.value for r in result.records] == [r.value for r in records]
