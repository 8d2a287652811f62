"""The web console: static pages under /console/ and the JSON they poll under /v1/console/.

The JSON is read from the broker's own state when asked (logs, group and share coordinators, the
queue gateway's connected consumers); kbroker/http/console_data.py shapes it. The pages are plain
HTML, JavaScript and CSS shipped in the package (kbroker/http/console_static), no build step.
"""

from __future__ import annotations

import struct
from importlib import resources
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kbroker.config_defs import render_value
from kbroker.http import console_data as data
from kbroker.http.queues import CONSUMERS_KEY
from kbroker.http.rest.errors import RestError
from kbroker.log import KafkaStorageError
from protocol.errors import KafkaProtocolError
from protocol.records import iter_batches

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.vq import VirtualQueues

STATIC_FILES = {  # file -> content type; nothing else is served
    "index.html": "text/html",
    "console.js": "text/javascript",
    "console.css": "text/css",
}
READ_CHUNK_BYTES = 1024 * 1024
# the pages load nothing from elsewhere, and no script in record data could run
CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'"


def add_console_routes(app: web.Application, broker: Broker, virtual_queues: VirtualQueues) -> None:
    console = Console(broker, virtual_queues)
    app.router.add_get("/console", console.redirect)
    app.router.add_get("/console/", console.static)
    app.router.add_get("/console/{file}", console.static)
    app.router.add_get("/v1/console/topics", console.topics)
    app.router.add_get("/v1/console/topics/{topic}", console.topic)
    app.router.add_get("/v1/console/topics/{topic}/partitions/{partition}/messages", console.messages)
    app.router.add_get("/v1/console/groups", console.groups)
    app.router.add_get("/v1/console/groups/{group}", console.group)
    app.router.add_get("/v1/console/share-groups", console.share_groups)
    app.router.add_get("/v1/console/vq/{queue}/records", console.queue_records)


def _member_assignment(member: Any, classic_consumer: bool) -> dict[str, list[int]]:
    """topic -> partitions of a member: a KIP-848 member's assignment, or a classic consumer-protocol
    member's assignment bytes (as its leader wrote them; bytes that do not decode show as none)."""
    from kbroker.client.groups import decode_assignment

    assigned = getattr(member, "assigned", None)
    if isinstance(assigned, dict):
        return {str(topic): sorted(partitions) for topic, partitions in assigned.items()}
    if not classic_consumer:
        return {}
    try:
        return decode_assignment(bytes(member.assignment))
    except (struct.error, UnicodeDecodeError, ValueError):
        return {}


def _int_param(request: web.Request, name: str, default: int | None = None) -> int | None:
    text = request.query.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise RestError(400, 400, f"{name} must be an integer, not {text!r}") from None


class Console:
    def __init__(self, broker: Broker, virtual_queues: VirtualQueues) -> None:
        self.broker = broker
        self.virtual_queues = virtual_queues

    # -- static files ------------------------------------------------------------------
    async def redirect(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/console/")

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info.get("file") or "index.html"
        content_type = STATIC_FILES.get(name)
        if content_type is None:
            raise RestError(404, 404, f"no console file {name!r}")
        body = resources.files("kbroker.http").joinpath("console_static", name).read_bytes()
        headers = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"}
        return web.Response(body=body, content_type=content_type, charset="utf-8", headers=headers)

    # -- topics ------------------------------------------------------------------------
    def _partitions(self, topic: str, count: int) -> list[dict[str, Any]]:
        out = []
        for index in range(count):
            unified = self.broker.logs.get_partition(topic, index)
            if unified is None:
                continue
            try:
                out.append(data.partition_summary(index, unified))
            except KafkaStorageError:
                out.append({"partition": index, "offline": True, "messages": 0, "size_bytes": 0})
        return out

    async def topics(self, request: web.Request) -> web.Response:
        topics = [
            data.topic_summary(name, self._partitions(name, metadata.partitions), name.startswith("__"))
            for name, metadata in sorted(self.broker.logs.topics().items())
        ]
        return web.json_response({"topics": topics})

    async def topic(self, request: web.Request) -> web.Response:
        name = request.match_info["topic"]
        metadata = self.broker.logs.topic(name)
        if metadata is None:
            raise RestError(404, 40401, f"topic {name!r} not found")
        partitions = self._partitions(name, metadata.partitions)
        effective = {
            key: render_value(value) for key, value in self.broker.config.topic_config(metadata.configs).items()
        }
        return web.json_response(
            {
                **data.topic_summary(name, partitions, name.startswith("__")),
                "topic_id": str(metadata.topic_id),
                "partition_details": partitions,
                "configs": data.topic_configs(metadata.configs, effective),
            }
        )

    async def messages(self, request: web.Request) -> web.Response:
        """?offset=N or ?timestamp=MS (the first record at or after it), &limit=L (at most MAX_MESSAGES)."""
        topic = request.match_info["topic"]
        try:
            index = int(request.match_info["partition"])
        except ValueError:
            raise RestError(404, 404, "partition is not a number") from None
        unified = self.broker.logs.get_partition(topic, index)
        if unified is None:
            raise RestError(404, 40402, f"partition {topic}-{index} not found")
        limit = min(max(_int_param(request, "limit", 50) or 1, 1), data.MAX_MESSAGES)
        timestamp = _int_param(request, "timestamp")
        start = unified.log_start_offset
        end = unified.high_watermark
        found_by_timestamp = None
        if timestamp is not None:
            found = unified.local.fetch_offset_by_timestamp(timestamp) if timestamp >= 0 else None
            offset = end if found is None else found.offset
            found_by_timestamp = None if found is None else found.offset
        else:
            asked = _int_param(request, "offset")
            offset = start if asked is None else asked
            if offset < 0:  # counted back from the high watermark
                offset = max(start, end + offset)
        offset = min(max(offset, start), end)
        messages: list[dict[str, Any]] = []
        next_offset = offset
        while next_offset < end and len(messages) < limit:
            try:
                chunk = unified.read(next_offset, READ_CHUNK_BYTES, max_offset=end).read()
            except KafkaStorageError as error:
                raise RestError(500, 50002, f"reading {topic}-{index} failed: {error}") from error
            if not chunk:
                break
            budget = data.MAX_PAGE_BYTES - sum(data.message_shown_bytes(m) for m in messages)
            if messages and budget <= 0:
                break
            page, after = data.messages_from_batches(
                topic, index, iter_batches(chunk), next_offset, end, limit - len(messages), budget
            )
            messages.extend(page)
            if after <= next_offset:
                break
            next_offset = after
        return web.json_response(
            {
                "topic": topic,
                "partition": index,
                "log_start_offset": start,
                "high_watermark": end,
                "from_offset": offset,
                "timestamp": timestamp,
                "offset_for_timestamp": found_by_timestamp,
                "next_offset": next_offset,
                "messages": messages,
            }
        )

    # -- consumer groups ---------------------------------------------------------------
    def _classic_groups(self) -> dict[str, Any]:
        from kbroker.group import group_runtime

        try:
            return dict(group_runtime(self.broker).groups)
        except KafkaProtocolError:
            return {}

    def _high_watermark(self, key: tuple[str, int]) -> int | None:
        unified = self.broker.logs.get_log(*key)
        return None if unified is None else unified.high_watermark

    def _group_detail(self, group_id: str, group: Any) -> dict[str, Any]:
        """A group of the group coordinator: classic, or a KIP-848 consumer group (group.consumer set),
        whose members, epochs and assignment live in that part while its offsets stay on the group."""
        consumer = getattr(group, "consumer", None)
        owners: dict[tuple[str, int], str] = {}
        members = []
        for member in (consumer or group).members.values():
            assigned = _member_assignment(member, consumer is None and group.protocol_type == "consumer")
            for topic, partitions in assigned.items():
                for partition in partitions:
                    owners[(topic, partition)] = member.member_id
            members.append(
                {
                    "member_id": member.member_id,
                    "group_instance_id": member.instance_id if consumer is not None else member.group_instance_id,
                    "client_id": member.client_id,
                    "client_host": member.client_host,
                    "assignment": [{"topic": t, "partitions": ps} for t, ps in sorted(assigned.items())],
                }
            )
        offsets = {key: committed.offset for key, committed in group.offsets.items()}
        keys = set(offsets) | set(owners)
        lag = data.lag_rows(offsets, {key: self._high_watermark(key) for key in keys}, owners)
        if consumer is not None:
            kind, state, generation, protocol = (
                "consumer",
                consumer.state.value,
                consumer.group_epoch,
                consumer.assignor_name,
            )
            leader = None
        else:
            kind, state, generation, protocol = "classic", group.state.value, group.generation_id, group.protocol_name
            leader = group.leader_id
        return {
            **data.group_summary(group_id, kind, str(state), members, lag),
            "generation": generation,
            "protocol_type": group.protocol_type,
            "protocol": protocol,
            "leader": leader,
            "member_details": members,
            "lag": lag,
        }

    async def groups(self, request: web.Request) -> web.Response:
        groups = []
        for group_id, group in sorted(self._classic_groups().items()):
            detail = self._group_detail(group_id, group)
            groups.append({key: detail[key] for key in ("group", "type", "state", "members", "total_lag")})
        return web.json_response({"groups": groups})

    async def group(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group"]
        group = self._classic_groups().get(group_id)
        if group is None:
            raise RestError(404, 40403, f"group {group_id!r} not found")
        return web.json_response(self._group_detail(group_id, group))

    # -- share groups and queues -----------------------------------------------------------
    async def share_groups(self, request: web.Request) -> web.Response:
        from kbroker.share import share_runtime

        try:
            runtime = share_runtime(self.broker)
        except KafkaProtocolError:
            runtime = None
        connected: set[tuple[str, str]] = request.app.get(CONSUMERS_KEY, set())
        known = dict(runtime.coordinator.groups) if runtime is not None else {}
        out = []
        for group_id in sorted(set(known) | {g for g, _ in connected}):
            group = known.get(group_id)
            shares = runtime.group_partitions(group_id) if runtime is not None else {}
            partitions = [
                data.share_partition_row(topic, index, share, self._high_watermark((topic, index)))
                for (topic, index), share in sorted(shares.items())
            ]
            out.append(
                {
                    "group": group_id,
                    "state": group.state if group is not None else "Empty",
                    "group_epoch": group.group_epoch if group is not None else 0,
                    "members": [
                        {
                            "member_id": m.member_id,
                            "client_id": m.client_id,
                            "client_host": m.client_host,
                            "subscribed": list(m.subscribed_topic_names),
                        }
                        for m in (group.members.values() if group is not None else [])
                    ],
                    "partitions": partitions,
                    "backlog": sum(p["backlog"] or 0 for p in partitions),
                    "queue_consumers": sorted(c for g, c in connected if g == group_id),
                }
            )
        return web.json_response({"share_groups": out})

    # -- virtual queues (the list and each queue's consumers come from /v1/vq) ----------
    async def queue_records(self, request: web.Request) -> web.Response:
        """?offset=N&limit=L: a queue's records from offset N, due or not, bounded as the message browser's."""
        queue = request.match_info["queue"]
        if not self.virtual_queues.exists(queue):
            raise RestError(404, 40404, f"queue {queue} not found")
        limit = min(max(_int_param(request, "limit", 50) or 1, 1), data.MAX_MESSAGES)
        offset = max(_int_param(request, "offset", 0) or 0, 0)
        try:
            found, more = self.virtual_queues.browse(queue, offset, limit)
        except KafkaStorageError as error:
            raise RestError(500, 50002, f"reading queue {queue} failed: {error}") from error
        records = data.queue_records_page(found.records)
        shown_all = len(records) == len(found.records)
        next_offset = found.next_offset if shown_all else records[-1]["offset"] + 1
        return web.json_response(
            {
                "queue": queue,
                "partition": found.partition,
                "from_offset": offset,
                "next_offset": next_offset,
                "more": more or not shown_all,
                "now": self.virtual_queues.clock(),
                "records": records,
            }
        )
