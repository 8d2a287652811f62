"""QueueIndex: for each partition of the data topic, each queue's record offsets (pure, no I/O).

A virtual queue is a record key of the data topic. The index keeps, per partition, the offsets
of each key's records in ascending order (an `array('q')` per queue), and `scanned_to`: the
offset up to which the partition's log has been read into it. Reading a queue then looks up
exactly its own offsets (a bisect from the position), never other queues' records.

A record with a null value (a tombstone) deletes its queue: every earlier offset of that key is
forgotten. The index is derived data: `to_bytes` / `from_bytes` give the checkpoint file (with
a CRC; a damaged or foreign file is refused and the index is rebuilt from the log).
"""

from __future__ import annotations

import struct
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field

MAGIC = b"KBVQIDX1"
_HEAD = struct.Struct(">8s16sI")  # magic, data topic id, partitions
_PARTITION = struct.Struct(">qI")  # scanned_to, queues
_QUEUE = struct.Struct(">HI")  # name length, offsets


class CheckpointError(ValueError):
    """The checkpoint file is damaged or was written for another topic."""


@dataclass(slots=True)
class PartitionIndex:
    scanned_to: int = 0  # offsets below this have been read from the log
    queues: dict[str, array[int]] = field(default_factory=dict)

    def add(self, queue: str, offset: int) -> None:
        offsets = self.queues.get(queue)
        if offsets is None:
            self.queues[queue] = array("q", (offset,))
        elif not offsets or offsets[-1] < offset:
            offsets.append(offset)

    def delete(self, queue: str) -> bool:
        return self.queues.pop(queue, None) is not None

    def truncate(self, end: int) -> None:
        """Forget offsets at or above `end` (the log was cut there)."""
        if self.scanned_to <= end:
            return
        for queue in list(self.queues):
            offsets = self.queues[queue]
            cut = bisect_left(offsets, end)
            if cut == 0:
                del self.queues[queue]
            elif cut < len(offsets):
                del offsets[cut:]
        self.scanned_to = end

    def trim(self, log_start: int) -> int:
        """Forget offsets below `log_start` (deleted by retention); queues left empty go. Returns queues dropped."""
        dropped = 0
        for queue in list(self.queues):
            offsets = self.queues[queue]
            if offsets and offsets[0] < log_start:
                cut = bisect_left(offsets, log_start)
                if cut == len(offsets):
                    del self.queues[queue]
                    dropped += 1
                else:
                    del offsets[:cut]
        return dropped


class QueueIndex:
    def __init__(self, partitions: int, topic_id: bytes = bytes(16)) -> None:
        self.topic_id = topic_id
        self.partitions = [PartitionIndex() for _ in range(partitions)]

    def partition(self, index: int) -> PartitionIndex:
        return self.partitions[index]

    def offsets(self, partition: int, queue: str) -> array[int]:
        return self.partitions[partition].queues.get(queue) or array("q")

    def exists(self, partition: int, queue: str) -> bool:
        return queue in self.partitions[partition].queues

    def next_offsets(self, partition: int, queue: str, start: int, limit: int) -> list[int]:
        """Up to `limit` offsets of `queue` at or after `start`, ascending."""
        offsets = self.offsets(partition, queue)
        at = bisect_left(offsets, start)
        return offsets[at : at + limit].tolist()

    def count_from(self, partition: int, queue: str, start: int) -> int:
        """How many records of `queue` are at or after `start`."""
        offsets = self.offsets(partition, queue)
        return len(offsets) - bisect_left(offsets, start)

    def queues(self) -> Iterator[tuple[int, str]]:
        for number, partition in enumerate(self.partitions):
            for queue in partition.queues:
                yield number, queue

    def queue_count(self) -> int:
        return sum(len(p.queues) for p in self.partitions)

    # -- the checkpoint file ------------------------------------------------------------
    def to_bytes(self) -> bytes:
        out = bytearray(_HEAD.pack(MAGIC, self.topic_id, len(self.partitions)))
        for partition in self.partitions:
            out += _PARTITION.pack(partition.scanned_to, len(partition.queues))
            for queue, offsets in partition.queues.items():
                name = queue.encode()
                out += _QUEUE.pack(len(name), len(offsets))
                out += name
                data = array("q", offsets)
                if _LITTLE:
                    data.byteswap()  # big-endian on disk
                out += data.tobytes()
        out += struct.pack(">I", zlib.crc32(out))
        return bytes(out)

    @classmethod
    def from_bytes(cls, data: bytes, topic_id: bytes, partitions: int) -> QueueIndex:
        if len(data) < _HEAD.size + 4 or struct.unpack(">I", data[-4:])[0] != zlib.crc32(data[:-4]):
            raise CheckpointError("checksum mismatch")
        magic, stored_id, count = _HEAD.unpack_from(data, 0)
        if magic != MAGIC:
            raise CheckpointError("not a virtual-queue index checkpoint")
        if stored_id != topic_id or count != partitions:
            raise CheckpointError("written for another data topic (recreated, or partitions added)")
        index = cls(partitions, topic_id)
        at = _HEAD.size
        for partition in index.partitions:
            partition.scanned_to, queues = _PARTITION.unpack_from(data, at)
            at += _PARTITION.size
            for _ in range(queues):
                size, n = _QUEUE.unpack_from(data, at)
                at += _QUEUE.size
                name = data[at : at + size].decode()
                at += size
                offsets = array("q")
                offsets.frombytes(data[at : at + 8 * n])
                if _LITTLE:
                    offsets.byteswap()
                at += 8 * n
                partition.queues[name] = offsets
        if at != len(data) - 4:
            raise CheckpointError("trailing bytes")
        return index


_LITTLE = struct.pack("=H", 1) == b"\x01\x00"
