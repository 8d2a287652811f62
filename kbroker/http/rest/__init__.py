"""REST Proxy v2 (the API of Confluent's REST Proxy and Redpanda's HTTP Proxy) on broker internals.

errors.py       REST Proxy's error bodies and codes
body.py         content types, JSON bodies, the binary (base64) and json embedded formats
partitioner.py  Kafka's murmur2 partitioner for keyed records
topics.py       GET /topics, /topics/{t}, /topics/{t}/partitions[/{p}]
produce.py      POST /topics/{t}, /topics/{t}/partitions/{p}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from kbroker.http.rest.produce import Produce
from kbroker.http.rest.topics import Topics

if TYPE_CHECKING:
    from kbroker.broker import Broker


def add_rest_routes(app: web.Application, broker: Broker) -> None:
    topics = Topics(broker)
    produce = Produce(broker, topics)
    router = app.router
    router.add_get("/topics", topics.list)
    router.add_get("/topics/{topic}", topics.get)
    router.add_post("/topics/{topic}", produce.to_topic)
    router.add_get("/topics/{topic}/partitions", topics.partitions)
    router.add_get("/topics/{topic}/partitions/{partition}", topics.partition)
    router.add_post("/topics/{topic}/partitions/{partition}", produce.to_partition)
