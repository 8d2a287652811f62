"""QueueIndex: each queue's offsets per partition, truncation, retention, the checkpoint file."""

from __future__ import annotations

import pytest

from kbroker.vq.index import CheckpointError, QueueIndex

TOPIC_ID = bytes(range(16))


def filled() -> QueueIndex:
    index = QueueIndex(2, TOPIC_ID)
    p0 = index.partition(0)
    for offset, queue in enumerate(["a", "b", "a", "c", "a", "b"]):
        p0.add(queue, offset)
    p0.scanned_to = 6
    index.partition(1).add("z", 10)
    index.partition(1).scanned_to = 11
    return index


def test_each_queue_has_its_own_offsets() -> None:
    index = filled()
    assert index.offsets(0, "a").tolist() == [0, 2, 4]
    assert index.next_offsets(0, "a", 1, 10) == [2, 4]
    assert index.next_offsets(0, "a", 0, 2) == [0, 2]
    assert index.next_offsets(0, "a", 5, 10) == []
    assert index.count_from(0, "b", 0) == 2 and index.count_from(0, "b", 2) == 1
    assert index.next_offsets(0, "missing", 0, 10) == [] and not index.exists(0, "missing")
    assert sorted(index.queues()) == [(0, "a"), (0, "b"), (0, "c"), (1, "z")]
    assert index.queue_count() == 4


def test_an_offset_is_added_once_in_order() -> None:
    index = QueueIndex(1)
    index.partition(0).add("q", 5)
    index.partition(0).add("q", 5)  # the same record seen twice (a catch-up overlapping an append)
    index.partition(0).add("q", 3)
    assert index.offsets(0, "q").tolist() == [5]


def test_delete_forgets_the_queue() -> None:
    index = filled()
    assert index.partition(0).delete("a")
    assert not index.partition(0).delete("a")
    assert not index.exists(0, "a") and index.exists(0, "b")


def test_truncate_forgets_offsets_at_or_past_the_log_end() -> None:
    index = filled()
    index.partition(0).truncate(3)
    assert index.offsets(0, "a").tolist() == [0, 2]
    assert index.offsets(0, "b").tolist() == [1]
    assert not index.exists(0, "c")
    assert index.partition(0).scanned_to == 3
    index.partition(0).truncate(10)  # past what was scanned: nothing to do
    assert index.partition(0).scanned_to == 3


def test_trim_forgets_offsets_below_the_log_start() -> None:
    index = filled()
    assert index.partition(0).trim(4) == 1  # c (offset 3) expired entirely
    assert index.offsets(0, "a").tolist() == [4]
    assert index.offsets(0, "b").tolist() == [5]
    assert not index.exists(0, "c")


def test_checkpoint_round_trip() -> None:
    index = filled()
    restored = QueueIndex.from_bytes(index.to_bytes(), TOPIC_ID, 2)
    assert restored.partition(0).scanned_to == 6 and restored.partition(1).scanned_to == 11
    assert {q: o.tolist() for q, o in restored.partition(0).queues.items()} == {"a": [0, 2, 4], "b": [1, 5], "c": [3]}
    assert restored.offsets(1, "z").tolist() == [10]
    unicode = QueueIndex(1, TOPIC_ID)
    unicode.partition(0).add("client-ü/42", 2**40)
    assert QueueIndex.from_bytes(unicode.to_bytes(), TOPIC_ID, 1).offsets(0, "client-ü/42").tolist() == [2**40]


def test_a_damaged_or_foreign_checkpoint_is_refused() -> None:
    data = bytearray(filled().to_bytes())
    with pytest.raises(CheckpointError, match="another data topic"):
        QueueIndex.from_bytes(bytes(data), bytes(16), 2)
    with pytest.raises(CheckpointError, match="another data topic"):
        QueueIndex.from_bytes(bytes(data), TOPIC_ID, 3)
    data[30] ^= 0xFF
    with pytest.raises(CheckpointError, match="checksum"):
        QueueIndex.from_bytes(bytes(data), TOPIC_ID, 2)
    with pytest.raises(CheckpointError):
        QueueIndex.from_bytes(b"", TOPIC_ID, 2)
