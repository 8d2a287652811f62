"""In-memory I/O for the transaction coordinator's unit tests: a state log and a marker writer that record calls."""

from __future__ import annotations

from kbroker.log import KafkaStorageError
from kbroker.txn.coordinator import TransactionCoordinator, TxnConfig
from kbroker.txn.transaction import TopicPartition, TxnRecord


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class MemoryStateLog:
    def __init__(self) -> None:
        self.records: list[tuple[str, TxnRecord | None]] = []
        self.fail = False

    async def write(self, transactional_id: str, record: TxnRecord | None) -> None:
        if self.fail:
            raise KafkaStorageError("disk gone")
        self.records.append((transactional_id, record))


class MemoryMarkers:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, list[TopicPartition], bool]] = []
        self.fail = False

    async def write_markers(
        self, producer_id: int, producer_epoch: int, partitions: list[TopicPartition], commit: bool
    ) -> None:
        if self.fail:
            raise KafkaStorageError("partition offline")
        self.calls.append((producer_id, producer_epoch, list(partitions), commit))


class Ids:
    def __init__(self) -> None:
        self.next = 1000

    def __call__(self) -> int:
        self.next += 1
        return self.next - 1


def new_coordinator(
    clock: Clock | None = None, *, max_timeout_ms: int = 900_000, expiration_ms: int = 604_800_000
) -> tuple[TransactionCoordinator, MemoryStateLog, MemoryMarkers, Clock]:
    clock = clock or Clock()
    state_log, markers = MemoryStateLog(), MemoryMarkers()
    coordinator = TransactionCoordinator(
        TxnConfig(max_timeout_ms=max_timeout_ms, id_expiration_ms=expiration_ms), state_log, markers, Ids(), clock
    )
    return coordinator, state_log, markers, clock
