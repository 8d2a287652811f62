"""/v1/testing/*: the test controls (kbroker.testing) over HTTP, so tests in any language can use them.

Served only when `kbroker.testing.admin.enable=true` (off by default; the broker then logs a
warning at start): advance the virtual clock, reset the broker, set and clear faults, make a
partition unavailable, close client connections. Bodies and answers are JSON; bad input is 422.

  GET    /v1/testing/clock                  {"wall_ms": ..., "offset_ms": ...}
  POST   /v1/testing/clock/advance          {"seconds": 30}                  -> {"woken": n, "wall_ms": ...}
  POST   /v1/testing/reset                                                   -> what was cleared
  GET    /v1/testing/faults                 the faults set, the unavailable partitions
  POST   /v1/testing/faults                 {"kind": "fail", "api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER",
                                             "count": 2} | {"kind": "delay", "api": ..., "seconds": 0.5, "count": n}
                                             | {"kind": "disconnect", "api": ..., "count": 1, "after": true}
  DELETE /v1/testing/faults                 clear every fault and unavailable partition
  POST   /v1/testing/unavailable            {"topic": "t", "partition": 0}   (DELETE: available again)
  POST   /v1/testing/connections/close                                       -> {"closed": n}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from kbroker.http.rest.errors import UNPROCESSABLE, RestError

if TYPE_CHECKING:
    from kbroker.testing.controls import TestControls

BASE = "/v1/testing"


def add_testing_routes(app: web.Application, controls: TestControls) -> None:
    routes = TestingRoutes(controls)
    app.router.add_get(f"{BASE}/clock", routes.clock)
    app.router.add_post(f"{BASE}/clock/advance", routes.advance)
    app.router.add_post(f"{BASE}/reset", routes.reset)
    app.router.add_get(f"{BASE}/faults", routes.faults)
    app.router.add_post(f"{BASE}/faults", routes.add_fault)
    app.router.add_delete(f"{BASE}/faults", routes.clear_faults)
    app.router.add_post(f"{BASE}/unavailable", routes.unavailable)
    app.router.add_delete(f"{BASE}/unavailable", routes.available)
    app.router.add_post(f"{BASE}/connections/close", routes.close_connections)


def _invalid(message: str) -> RestError:
    return RestError(422, UNPROCESSABLE, message)


async def _body(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    body = await request.json()
    if not isinstance(body, dict):
        raise _invalid("the body must be a JSON object")
    return body


def _number(body: dict[str, Any], name: str, default: Any = None) -> Any:
    value = body.get(name, default)
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    raise _invalid(f"{name} must be a number")


class TestingRoutes:
    __test__ = False

    def __init__(self, controls: TestControls) -> None:
        self.controls = controls

    async def clock(self, request: web.Request) -> web.Response:
        clock = self.controls.clock
        return web.json_response({"wall_ms": clock.wall_ms(), "offset_ms": clock.offset_ms})

    async def advance(self, request: web.Request) -> web.Response:
        seconds = _number(await _body(request), "seconds")
        if seconds is None or seconds < 0:
            raise _invalid("seconds: a number of seconds, not negative")
        woken = await self.controls.advance(seconds)
        return web.json_response({"woken": woken, "wall_ms": self.controls.clock.wall_ms()})

    async def reset(self, request: web.Request) -> web.Response:
        return web.json_response(self.controls.reset())

    async def faults(self, request: web.Request) -> web.Response:
        return web.json_response(self.controls.faults.describe())

    async def add_fault(self, request: web.Request) -> web.Response:
        body = await _body(request)
        faults = self.controls.faults
        kind, api = body.get("kind"), body.get("api")
        count = _number(body, "count", 1)
        if not isinstance(api, int | str) or isinstance(api, bool):
            raise _invalid("api: an API name (Produce) or key (0)")
        try:
            if kind == "fail":
                error = body.get("error")
                if not isinstance(error, int | str) or isinstance(error, bool):
                    raise _invalid("error: a Kafka error name (NOT_LEADER_OR_FOLLOWER) or code (6)")
                fault = faults.fail(api, error, count)
            elif kind == "delay":
                fault = faults.delay(api, _number(body, "seconds", 0), _number(body, "count"))
            elif kind == "disconnect":
                fault = faults.disconnect(api, count, after=bool(body.get("after", False)))
            else:
                raise _invalid("kind: fail, delay or disconnect")
        except ValueError as error:
            raise _invalid(str(error)) from None
        return web.json_response(fault.describe(), status=201)

    async def clear_faults(self, request: web.Request) -> web.Response:
        self.controls.faults.clear()
        return web.json_response(self.controls.faults.describe())

    async def _partition(self, request: web.Request) -> tuple[str, int]:
        body = await _body(request)
        topic, partition = body.get("topic"), body.get("partition")
        if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(partition, bool):
            raise _invalid('a body {"topic": NAME, "partition": INDEX}')
        return topic, partition

    async def unavailable(self, request: web.Request) -> web.Response:
        self.controls.faults.make_unavailable(*await self._partition(request))
        return web.json_response(self.controls.faults.describe())

    async def available(self, request: web.Request) -> web.Response:
        self.controls.faults.make_available(*await self._partition(request))
        return web.json_response(self.controls.faults.describe())

    async def close_connections(self, request: web.Request) -> web.Response:
        return web.json_response({"closed": self.controls.close_connections()})
