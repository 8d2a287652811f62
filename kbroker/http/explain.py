"""GET /v1/explain/groups and /v1/explain/transactions: why a group or a partition is where it is,
as JSON, read from the coordinators and the partitions when asked.

Groups: state (and since when), generation, protocol, leader, members, committed offsets with
their lag. Transactions: each partition held back by an open transaction (last stable offset below
the high watermark) with the producers holding it, and each open transaction of the coordinator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from kbroker.log import KafkaStorageError
from protocol.errors import KafkaProtocolError

if TYPE_CHECKING:
    from kbroker.broker import Broker


class Explain:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    async def groups(self, request: web.Request) -> web.Response:
        from kbroker.group import group_runtime

        try:
            groups = group_runtime(self.broker).groups
        except KafkaProtocolError:
            groups = {}
        out = []
        for group_id, group in sorted(groups.items()):
            offsets = []
            for (topic, index), committed in sorted(group.offsets.items()):
                partition = self.broker.logs.get_log(topic, index)
                hw = partition.high_watermark if partition is not None else None
                lag = None if hw is None else max(0, hw - committed.offset)
                offsets.append({"topic": topic, "partition": index, "committed": committed.offset,
                                "high_watermark": hw, "lag": lag})  # fmt: skip
            out.append(
                {
                    "group": group_id,
                    "state": group.state.value,
                    "state_since_ms": group.state_timestamp,
                    "generation": group.generation_id,
                    "protocol_type": group.protocol_type,
                    "protocol": group.protocol_name,
                    "leader": group.leader_id,
                    "members": [
                        {
                            "member_id": m.member_id,
                            "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id,
                            "client_host": m.client_host,
                        }  # fmt: skip
                        for m in group.members.values()
                    ],
                    "offsets": offsets,
                }
            )
        return web.json_response({"groups": out})

    async def transactions(self, request: web.Request) -> web.Response:
        from kbroker.txn.runtime import transaction_coordinator
        from kbroker.txn.transaction import TxnState

        by_producer: dict[int, Any] = {}
        open_transactions = []
        try:
            coordinator = transaction_coordinator(self.broker)
            for metadata in coordinator.list(None, set()):
                if metadata.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.DEAD):
                    continue
                entry = {
                    "transactional_id": metadata.transactional_id,
                    "producer_id": metadata.producer_id,
                    "producer_epoch": metadata.producer_epoch,
                    "state": metadata.state.label,
                    "started_ms": metadata.start_timestamp,
                    "timeout_ms": metadata.timeout_ms,
                    "partitions": sorted(f"{t}-{p}" for t, p in metadata.partitions),
                }
                open_transactions.append(entry)
                by_producer[metadata.producer_id] = entry
        except KafkaProtocolError:
            pass
        held_back = []
        for (topic, index), unified in sorted(self.broker.logs.partitions()):
            try:
                ongoing = unified.producer_state().ongoing_transactions()
            except KafkaStorageError:
                continue
            if not ongoing:
                continue
            lso, hw = unified.last_stable_offset(), unified.high_watermark
            held_back.append(
                {
                    "topic": topic,
                    "partition": index,
                    "last_stable_offset": lso,
                    "high_watermark": hw,
                    "records_held_back": hw - lso,
                    "open": [
                        {
                            "producer_id": pid,
                            "first_offset": first,
                            "transactional_id": by_producer.get(pid, {}).get("transactional_id"),
                        }  # fmt: skip
                        for pid, first in sorted(ongoing.items(), key=lambda item: item[1])
                    ],
                }
            )
        return web.json_response({"open_transactions": open_transactions, "partitions_held_back": held_back})
