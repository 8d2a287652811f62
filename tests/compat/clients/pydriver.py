"""The in-process Python clients as a driver process, so that a member can be killed (SIGKILL, no LeaveGroup).

``python -m tests.compat.clients.pydriver <client> serve`` answers the group and transaction commands of the driver
protocol (docs/compatibility.md) with that client's in-process adapter.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from tests.compat.clients.adapter import Client, ClientError, Consumed, Record, b64, unb64
from tests.compat.clients.driver_client import DriverClient, member_config
from tests.compat.clients.members import GroupDescription, Member, MemberConfig, TxnProducer


class InProcessGroupOps:
    """Group, idempotence and transaction operations of an in-process Python client.

    Each client keeps them in a module of its own (`<client>_groups`, named by `groups`);
    `to_consumed` turns that client's consumer records into Consumed.
    """

    name: str
    groups: ClassVar[Any]
    to_consumed: ClassVar[Callable[[Any], Consumed]]

    def produce_idempotent(
        self, bootstrap: str, topic: str, records: Sequence[Record], pace_ms: int = 0
    ) -> list[tuple[int, int]]:
        return list(self.groups.produce_idempotent(bootstrap, topic, records, pace_ms))

    def open_member(self, bootstrap: str, config: MemberConfig) -> Member:
        member: Member = self.groups.open_member(bootstrap, config, type(self).to_consumed)
        return member

    def describe_group(self, bootstrap: str, group: str, topic: str) -> GroupDescription:
        description: GroupDescription = self.groups.describe_group(bootstrap, group, topic)
        return description

    def txn_producer(self, bootstrap: str, transactional_id: str, timeout_ms: int = 60000) -> TxnProducer:
        producer: TxnProducer = self.groups.txn_producer(bootstrap, transactional_id, timeout_ms)
        return producer

    def spawn(self) -> Client:
        return python_driver(self.name)


def python_driver(name: str) -> DriverClient:
    """A DriverClient running the named Python client in a process of its own."""
    return DriverClient(
        name=f"{name} (own process)", command=[sys.executable, "-m", "tests.compat.clients.pydriver", name]
    )


class Server:
    """The driver protocol's group and transaction commands over one in-process adapter."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.members: dict[str, Member] = {}
        self.producers: dict[str, TxnProducer] = {}

    def handle(self, r: dict[str, Any]) -> dict[str, Any]:
        op = r["op"]
        if op == "member_open":
            self.members[r["id"]] = self.client.open_member(r["bootstrap"], member_config(r))
            return {}
        if op == "member_take":
            state = self.members[r["id"]].take()
            records = [
                {
                    "partition": c.partition,
                    "offset": c.offset,
                    "timestamp": c.timestamp,
                    "key": b64(c.key),
                    "value": b64(c.value),
                    "headers": [[k, b64(v)] for k, v in c.headers],
                }
                for c in state.records
            ]
            return {"records": records, "assignment": sorted(state.assignment)}
        if op == "member_commit":
            offsets = r.get("offsets")
            self.members[r["id"]].commit(None if offsets is None else {int(p): o for p, o in offsets.items()})
            return {}
        if op == "member_close":
            self.members.pop(r["id"]).close()
            return {}
        if op == "produce":
            wanted = [Record(unb64(x["key"]), unb64(x["value"]), partition=x["partition"]) for x in r["records"]]
            offsets = self.client.produce_idempotent(r["bootstrap"], r["topic"], wanted, r.get("pace_ms", 0))
            return {"offsets": offsets}
        raise ClientError("unsupported", f"the Python driver has no op {op}")


def main(argv: list[str]) -> int:
    from tests.compat.clients.registry import FACTORIES

    subject = FACTORIES[argv[0]]()
    if not isinstance(subject, Client):
        print(subject, file=sys.stderr)
        return 2
    server = Server(subject)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = {**server.handle(json.loads(line)), "ok": True}
        except ClientError as exc:
            answer = {"ok": False, "error": {"kind": exc.kind, "message": exc.message}}
        except Exception as exc:
            answer = {"ok": False, "error": {"kind": "other", "message": repr(exc)}}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:2]))
