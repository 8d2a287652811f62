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
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import structlog

from kbroker.txn.coordinator import COORDINATOR_EPOCH, TransactionCoordinator, TxnConfig
from kbroker.txn.markers import LogMarkerWriter, MarkerListener
from kbroker.txn.transaction import TopicPartition, TxnRecord
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

    def replay(self, partitions: Iterable[int] | None = None) -> list[tuple[str, TxnRecord | None]]:
        records: list[tuple[str, TxnRecord | None]] = []
        skipped = 0
        for partition, key, value in self.store.replay(partitions):
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
            self,  # write_markers: the marker writer, with the coordinator epoch of the transaction's partition
            broker.producer_ids.generate,
            broker.clock.wall_ms,
        )
        # cluster mode: the leader epoch at which this broker leads each __transaction_state partition, the
        # coordinator epoch of its transactions' markers (Kafka's): a deposed coordinator's markers are fenced
        self.coordinator_epochs: dict[int, int] = {}
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

    async def write_markers(
        self, producer_id: int, producer_epoch: int, partitions: list[TopicPartition], commit: bool
    ) -> None:
        """The coordinator's MarkerWriter: the markers, with the coordinator epoch of the transaction's
        partition of __transaction_state (0 on a broker alone)."""
        metadata = self.coordinator.by_producer_id(producer_id)
        store = self.state_log.store
        partition = None if metadata is None else store.partition_for(metadata.transactional_id)
        epoch = (
            self.coordinator_epochs.get(partition, COORDINATOR_EPOCH) if partition is not None else COORDINATOR_EPOCH
        )
        await self.marker_writer.write_markers(producer_id, producer_epoch, partitions, commit, coordinator_epoch=epoch)

    def coordinator_error(self, transactional_id: str) -> ErrorCode:
        """NOT_COORDINATOR for an id whose __transaction_state partition this broker does not lead."""
        owned = self.state_log.store.owned  # cluster mode: the partitions led here; None: every id is ours
        if owned is None or self.state_log.store.partition_for(transactional_id) in owned:
            return ErrorCode.NONE
        return ErrorCode.NOT_COORDINATOR

    def load(self, partitions: Iterable[int] | None = None, leader_epochs: Mapping[int, int] | None = None) -> None:
        """Replay __transaction_state (the given partitions; all by default). In cluster mode the partitions
        then count as this broker's, their markers carrying `leader_epochs` as coordinator epochs;
        transactions found in a Prepare state are completed by the caller (`complete_prepared`)."""
        started = time.perf_counter()
        partitions = None if partitions is None else set(partitions)
        self.coordinator_epochs.update(leader_epochs or {})
        records = self.state_log.replay(partitions)
        self.coordinator.load(records)
        store = self.state_log.store
        if partitions is not None and store.owned is not None:
            store.owned.update(partitions)
        log.info(
            "transaction_coordinator_loaded",
            partitions="all" if partitions is None else sorted(partitions),
            transactional_ids=len(self.coordinator.transactions),
            records=len(records),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )

    def unload(self, partitions: Iterable[int]) -> None:
        """Leadership of these __transaction_state partitions moved away: their transactional ids go."""
        lost = set(partitions)
        store = self.state_log.store
        if store.owned is not None:
            store.owned -= lost
        for partition in lost:
            self.coordinator_epochs.pop(partition, None)
        gone = [tid for tid in self.coordinator.transactions if store.partition_for(tid) in lost]
        self.coordinator.unload(gone)
        for tid in [tid for tid in self.state_log.latest if store.partition_for(tid) in lost]:
            del self.state_log.latest[tid]
        log.info("transaction_coordinator_unloaded", partitions=sorted(lost), transactional_ids=len(gone))

    async def start(self) -> None:
        completed = await self.coordinator.complete_prepared()
        if completed:
            log.info("transactions_completed_at_startup", count=completed)
        self.begin()

    def begin(self) -> None:
        """Serve and start the timers (after `start` completed what a crash left prepared)."""
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
    if broker.cluster is None:
        runtime.load()
    else:  # cluster mode: each __transaction_state partition loads when this broker leads it
        store = runtime.state_log.store
        store.owned, store.in_cluster = set(), True
        runtime.coordinator.owns = lambda transactional_id: (
            runtime.coordinator_error(transactional_id) is ErrorCode.NONE
        )
    await runtime.start()
    return runtime


def start_unused_transaction_coordinator(broker: Broker) -> TxnRuntime:
    """The coordinator of a single broker whose data directory had no __transaction_state at start (no
    prepared transaction to complete), started at its first use (Broker.coordinators_on_first_use)."""
    runtime = TxnRuntime(broker)
    runtime.load()
    runtime.begin()
    return runtime


def transaction_coordinator(broker: Broker, transactional_id: str | None = None) -> TransactionCoordinator:
    """The running coordinator; COORDINATOR_NOT_AVAILABLE (retriable) while there is none. With
    `transactional_id`: NOT_COORDINATOR when another broker coordinates that id (cluster mode)."""
    runtime = broker.transactions
    if runtime is None and broker.coordinators_on_first_use:
        broker.transactions = runtime = start_unused_transaction_coordinator(broker)
    if runtime is None or not runtime.active:
        raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if transactional_id is not None:
        error = runtime.coordinator_error(transactional_id)
        if error is not ErrorCode.NONE:
            raise KafkaProtocolError(error)
    return runtime.coordinator


def marker_writer(broker: Broker) -> LogMarkerWriter:
    """The writer the coordinator uses, for WriteTxnMarkers; COORDINATOR_NOT_AVAILABLE before it is built."""
    runtime = broker.transactions
    if runtime is None and broker.coordinators_on_first_use:
        broker.transactions = runtime = start_unused_transaction_coordinator(broker)
    if runtime is None:
        raise KafkaProtocolError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return runtime.marker_writer
