"""Writing COMMIT/ABORT markers: locally for the partitions this broker leads (every partition of a broker
alone), through WriteTxnMarkers to the leader for the others (cluster mode, Kafka's
TransactionMarkerChannelManager: `remote`). A leader's refusal or silence is retried for a few seconds,
then the transaction stays in its Prepare state and the coordinator completes it later.

For each partition of the transaction: a control batch (transactional + control bits,
producer id and epoch, one record: key = version 0 + type, value = version 0 +
coordinator epoch) is appended through the partition's `append_as_leader(..., MARKER)`
(its producer state ends the producer's open transaction there, an ABORT enters the
aborted index, waiting fetches wake), and `on_marker(topic, partition, producer_id, commit)` is called
(the group coordinator publishes or drops pending transactional offsets of
__consumer_offsets partitions). Then every written partition is made durable as an
acks=all produce would be (fsync when the topic asks for it).

A partition whose topic was deleted is skipped; a storage error raises, leaving the
transaction in its Prepare state for the coordinator to retry.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import structlog

from kbroker.log import AppendInfo, AppendOrigin, KafkaStorageError, UnifiedLog
from kbroker.txn.coordinator import COORDINATOR_EPOCH
from kbroker.txn.transaction import TopicPartition
from protocol.errors import ErrorCode
from protocol.record_builder import build_control_batch
from protocol.records import ControlRecordType

if TYPE_CHECKING:
    from kbroker.broker import Broker

log = structlog.get_logger(__name__)

LEADER_EPOCH = 0  # as Produce stamps it
NO_LEADER = -1
REMOTE_ATTEMPTS = 10
REMOTE_RETRY_S = 0.5
# a leader's answers that leave the marker written: a marker newer than this one is there already
_WRITTEN = frozenset({ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
MarkerListener = Callable[[str, int, int, bool], None]


class RemoteMarkers(Protocol):
    """Cluster mode: who leads a partition, and the WriteTxnMarkers request to another broker."""

    def leader_of(self, topic: str, partition: int) -> int | None:
        """The partition's leader, NO_LEADER while it has none, None when the topic is gone."""
        ...

    async def send(
        self,
        broker_id: int,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        commit: bool,
        coordinator_epoch: int,
    ) -> dict[TopicPartition, ErrorCode]: ...


class LogMarkerWriter:
    def __init__(self, broker: Broker, on_marker: MarkerListener | None = None) -> None:
        self.broker = broker
        self.on_marker = on_marker
        self.remote: RemoteMarkers | None = None  # cluster mode: markers of other brokers' partitions go there

    async def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        commit: bool,
        *,
        coordinator_epoch: int = COORDINATOR_EPOCH,
    ) -> None:
        """The coordinator's markers: those of partitions led here written locally, the others sent to their
        leaders (cluster mode); returns once all are durable, raises KafkaStorageError otherwise (the
        transaction stays in its Prepare state and the coordinator tries again)."""
        remote = self.remote
        if remote is None:
            await self.write_local(producer_id, producer_epoch, partitions, commit, coordinator_epoch=coordinator_epoch)
            return
        for attempt in range(REMOTE_ATTEMPTS):
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in partitions:
                leader = remote.leader_of(*tp)
                if leader is not None:  # None: the topic is gone, as a missing local partition is skipped
                    by_leader.setdefault(leader, []).append(tp)
            local = by_leader.pop(self.broker.node_id, [])
            failed: dict[TopicPartition, str] = {tp: "no leader" for tp in by_leader.pop(NO_LEADER, [])}
            if local:
                await self.write_local(producer_id, producer_epoch, local, commit, coordinator_epoch=coordinator_epoch)
            sends = [
                remote.send(leader, producer_id, producer_epoch, tps, commit, coordinator_epoch)
                for leader, tps in by_leader.items()
            ]
            for (leader, tps), outcome in zip(
                by_leader.items(), await asyncio.gather(*sends, return_exceptions=True), strict=True
            ):
                if isinstance(outcome, Exception):
                    failed.update(dict.fromkeys(tps, f"broker {leader}: {type(outcome).__name__} {outcome}"))
                    continue
                if isinstance(outcome, BaseException):
                    raise outcome
                for tp, error in outcome.items():
                    if error not in _WRITTEN:
                        failed[tp] = f"broker {leader}: {error.name}"
            if not failed:
                return
            partitions = sorted(failed)  # the written ones are not sent again
            log.info("transaction_markers_retrying", producer_id=producer_id, attempt=attempt + 1, failed=failed)
            await asyncio.sleep(REMOTE_RETRY_S)
        raise KafkaStorageError(f"transaction markers not written: {failed}")

    async def write_local(
        self,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        commit: bool,
        *,
        coordinator_epoch: int = COORDINATOR_EPOCH,
    ) -> None:
        """Append the markers (all before the first await), then wait until they are durable."""
        written: list[tuple[UnifiedLog, AppendInfo]] = []
        marker = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        now = int(time.time() * 1000)
        for topic, partition in partitions:
            partition_log = self.broker.logs.get_partition(topic, partition)
            if partition_log is None:
                log.warning("transaction_marker_skipped", topic=topic, partition=partition, reason="no such partition")
                continue
            batch = bytearray(
                build_control_batch(
                    marker,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    coordinator_epoch=coordinator_epoch,
                    timestamp=now,
                )
            )
            info = partition_log.append_as_leader(
                batch, AppendOrigin.MARKER, leader_epoch=LEADER_EPOCH, coordinator_epoch=coordinator_epoch, now=now
            )
            if self.on_marker is not None:
                self.on_marker(topic, partition, producer_id, commit)
            written.append((partition_log, info))
        outcomes = await asyncio.gather(
            *(partition_log.wait_for_ack(info, -1) for partition_log, info in written), return_exceptions=True
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise KafkaStorageError(f"transaction marker not durable: {outcome}") from outcome
        log.debug(
            "transaction_markers_written",
            producer_id=producer_id,
            epoch=producer_epoch,
            marker=marker.name,
            partitions=len(written),
        )
