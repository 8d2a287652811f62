"""The transaction coordinator's asyncio shell: state log, markers, timers; wiring on the broker.

`start_transaction_coordinator(broker)` (server, after the group coordinator) replays
__transaction_state, completes transactions left in PrepareCommit/PrepareAbort, and
starts one task that every transaction.abort.timed.out.transaction.cleanup.interval.ms
aborts timed-out transactions and retries unfinished completions, and every
transaction.remove.expired.transaction.cleanup.interval.ms expires idle ids.
Handlers reach it with `transaction_coordinator(broker)`.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import structlog

from kbroker.txn.coordinator import TransactionCoordinator, TxnConfig
from kbroker.txn.markers import LogMarkerWriter, MarkerListener
from kbroker.txn.transaction import TxnRecord
from kbroker.txn.txn_log import TxnLogFormatError, parse_txn_key, parse_txn_value, txn_key, txn_value
from kbroker.txn.txn_store import Entry, TxnStateStore, snapshot_batches
from protocol.errors import ErrorCode, KafkaProtocolError

if TYPE_CHECKING:
    from kbroker.broker import Broker

log = structlog.get_logger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LogStateLog:
    """The coordinator's StateLog over TxnStateStore; keeps the latest record of each id for snapshots."""

    def __init__(self, store: TxnStateStore) -> None:
        self.store = store
        self.latest: dict[str, bytes] = {}  # transactional id -> its last value in the log
        self._background: set[asyncio.Task[None]] = set()

    def replay(self) -> list[tuple[str, TxnRecord | None]]:
        records: list[tuple[str, TxnRecord | None]] = []
        skipped = 0
        for partition, key, value in self.store.replay():
            try:
                transactional_id = parse_txn_key(key)
                record = None if value is None else parse_txn_value(value)
            except TxnLogFormatError as error:
                skipped += 1
                log.warning("transaction_record_skipped", partition=partition, error=str(error))
                continue
            if value is None:
                self.latest.pop(transactional_id, None)
            else:
                self.latest[transactional_id] = value
            records.append((transactional_id, record))
        if skipped:
            log.warning("transaction_records_skipped", count=skipped)
        return records

    async def write(self, transactional_id: str, record: TxnRecord | None) -> None:
        value = None if record is None else txn_value(record)
        partition_log, info = self.store.append(transactional_id, [(txn_key(transactional_id), value)])
        if value is None:
            self.latest.pop(transactional_id, None)
        else:
            self.latest[transactional_id] = value
        self._maybe_snapshot(self.store.partition_for(transactional_id))
        await self.store.wait_durable(partition_log, info)

    def _maybe_snapshot(self, partition: int) -> None:
        if not self.store.needs_snapshot(partition):
            return
        live: list[Entry] = [
            (txn_key(tid), value) for tid, value in self.latest.items() if self.store.partition_for(tid) == partition
        ]
        start = self.store.start_snapshot(partition, snapshot_batches(live))
        task = asyncio.get_running_loop().create_task(self.store.finish_snapshot(partition, start, len(live)))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def stop(self) -> None:
        await asyncio.gather(*self._background, return_exceptions=True)


class TxnRuntime:
    def __init__(self, broker: Broker) -> None:
        config = broker.config
        self.abort_interval_ms = config.get_int("transaction.abort.timed.out.transaction.cleanup.interval.ms")
        self.expiry_interval_ms = config.get_int("transaction.remove.expired.transaction.cleanup.interval.ms")
        self.state_log = LogStateLog(TxnStateStore(broker.logs, config.get_int("transaction.state.log.num.partitions")))
        self.marker_writer = LogMarkerWriter(broker, on_marker=self._on_marker(broker))
        self.coordinator = TransactionCoordinator(
            TxnConfig(
                max_timeout_ms=config.get_int("transaction.max.timeout.ms"),
                id_expiration_ms=config.get_int("transactional.id.expiration.ms"),
            ),
            self.state_log,
            self.marker_writer,
            broker.producer_ids.generate,
            broker.clock.wall_ms,
        )
        self.clock = broker.clock
        self.active = False
        self._task: asyncio.Task[None] | None = None

    @staticmethod
    def _on_marker(broker: Broker) -> MarkerListener:
        def on_marker(topic: str, partition: int, producer_id: int, commit: bool) -> None:
            if topic != OFFSETS_TOPIC:
                return
            from kbroker.group import group_runtime

            try:
                group_runtime(broker).on_txn_marker(producer_id, partition, commit)
            except KafkaProtocolError:
                log.warning("transaction_offsets_not_published", partition=partition, producer_id=producer_id)

        return on_marker

    def load(self) -> None:
        started = time.perf_counter()
        records = self.state_log.replay()
        self.coordinator.load(records)
        log.info(
            "transaction_coordinator_loaded",
            transactional_ids=len(self.coordinator.transactions),
            records=len(records),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )

    async def start(self) -> None:
        completed = await self.coordinator.complete_prepared()
        if completed:
            log.info("transactions_completed_at_startup", count=completed)
        self.active = True
        self._task = asyncio.get_running_loop().create_task(self._run(), name="transaction-timers")

    async def stop(self) -> None:
        self.active = False
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.state_log.stop()

    async def _run(self) -> None:
        clock = self.clock
        next_expiry = clock.wall_ms() + self.expiry_interval_ms
        while True:
            await clock.sleep(self.abort_interval_ms / 1000)
            try:
                await self.coordinator.abort_timed_out()
                await self.coordinator.complete_prepared()
                if clock.wall_ms() >= next_expiry:
                    next_expiry = clock.wall_ms() + self.expiry_interval_ms
                    await self.coordinator.expire_transactional_ids()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - one failing round must not stop the timers
                log.exception("transaction_timer_failed")


async def start_transaction_coordinator(broker: Broker) -> TxnRuntime:
    """Replay __transaction_state, complete prepared transactions, start the timers (the server
    then sets broker.transactions; the group coordinator must be running: markers publish offsets)."""
    runtime = TxnRuntime(broker)
    runtime.load()
    await runtime.start()
    return runtime


def transaction_coordinator(broker: Broker) -> TransactionCoordinator:
    """The running coordinator; COORDINATOR_NOT_AVAILABLE (retriable) while there is none."""
    runtime = broker.transactions
    if runtime is None or not runtime.active:
        raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return runtime.coordinator


def marker_writer(broker: Broker) -> LogMarkerWriter:
    """The writer the coordinator uses, for WriteTxnMarkers; COORDINATOR_NOT_AVAILABLE before it is built."""
    runtime = broker.transactions
    if runtime is None:
        raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return runtime.marker_writer
