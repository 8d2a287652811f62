"""Issue 6: idempotent producers. Every record once, dense offsets, and batches stamped with a producer id."""

from __future__ import annotations

import pytest

from tests.compat.clients.wire import batch_producers
from tests.compat.group_support import keyed
from tests.compat.support import Compat, assert_dense, by_partition

COUNT = 300
PARTITIONS = 3


@pytest.mark.timeout(120)
def test_idempotent_produce(compat: Compat) -> None:
    compat.need(ops=("produce_idempotent",))
    topic = compat.setup_topic("idempotent", PARTITIONS)
    records = keyed("idem", COUNT, PARTITIONS)
    offsets = compat.client.produce_idempotent(compat.bootstrap, topic, records)
    for partition in range(PARTITIONS):
        mine = [o for p, o in offsets if p == partition]
        assert sorted(mine) == list(range(COUNT // PARTITIONS)), f"partition {partition}: {mine[:20]}"
    consumed = compat.setup_consume(topic, COUNT, list(range(PARTITIONS)), isolation="read_uncommitted")
    assert sorted(r.value or b"" for r in consumed) == sorted(r.value or b"" for r in records)
    for partition, part in by_partition(consumed).items():
        assert_dense(part)
        batches = batch_producers(compat.bootstrap, topic, partition)
        assert batches and all(pid >= 0 for _, _, pid, _ in batches), f"not idempotent batches: {batches}"
        # Sequences run with the offsets: each batch's base sequence is its base offset (one producer, no gaps).
        assert all(seq == base for base, _, _, seq in batches), batches
