"""GET /topics, /topics/{topic}, /topics/{topic}/partitions[/{partition}] (REST Proxy v2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from kbroker.config_defs import render_value
from kbroker.http.auth import visible_topics
from kbroker.http.rest.errors import V2_JSON, RestError, partition_not_found, topic_not_found

if TYPE_CHECKING:
    from kbroker.broker import Broker


def answer(body: Any, status: int = 200) -> web.Response:
    return web.json_response(body, status=status, content_type=V2_JSON)


def partition_index(request: web.Request) -> int:
    text = request.match_info["partition"]
    try:
        return int(text)
    except ValueError:
        raise RestError(404, 404, f"partition {text!r} is not a number") from None


class Topics:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def require(self, topic: str) -> int:
        """The topic's partition count; 40401 when there is no such topic."""
        metadata = self.broker.logs.topic(topic)
        if metadata is None:
            raise topic_not_found(topic)
        return metadata.partitions

    def _partition(self, index: int) -> dict[str, Any]:
        node = self.broker.node_id
        return {"partition": index, "leader": node, "replicas": [{"broker": node, "leader": True, "in_sync": True}]}

    async def brokers(self, request: web.Request) -> web.Response:
        return answer({"brokers": [self.broker.node_id]})

    async def list(self, request: web.Request) -> web.Response:
        return answer(visible_topics(request, self.broker, sorted(self.broker.logs.topics())))

    async def get(self, request: web.Request) -> web.Response:
        topic = request.match_info["topic"]
        partitions = self.require(topic)
        metadata = self.broker.logs.topic(topic)
        overrides = metadata.configs if metadata is not None else {}
        configs = {name: render_value(value) for name, value in self.broker.config.topic_config(overrides).items()}
        return answer(
            {"name": topic, "configs": configs, "partitions": [self._partition(p) for p in range(partitions)]}
        )

    async def partitions(self, request: web.Request) -> web.Response:
        partitions = self.require(request.match_info["topic"])
        return answer([self._partition(p) for p in range(partitions)])

    async def partition(self, request: web.Request) -> web.Response:
        topic = request.match_info["topic"]
        index = partition_index(request)
        if not 0 <= index < self.require(topic):
            raise partition_not_found(topic, index)
        return answer(self._partition(index))
