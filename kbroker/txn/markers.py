"""Writing COMMIT/ABORT markers (Kafka's WriteTxnMarkers, done locally: one node leads every partition).

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
from typing import TYPE_CHECKING

import structlog

from kbroker.log import AppendInfo, AppendOrigin, KafkaStorageError, UnifiedLog
from kbroker.txn.coordinator import COORDINATOR_EPOCH
from kbroker.txn.transaction import TopicPartition
from protocol.record_builder import build_control_batch
from protocol.records import ControlRecordType

if TYPE_CHECKING:
    from kbroker.broker import Broker

log = structlog.get_logger(__name__)

LEADER_EPOCH = 0  # as Produce stamps it
MarkerListener = Callable[[str, int, int, bool], None]


class LogMarkerWriter:
    def __init__(self, broker: Broker, on_marker: MarkerListener | None = None) -> None:
        self.broker = broker
        self.on_marker = on_marker

    async def write_markers(
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
