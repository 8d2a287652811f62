"""Authentication and ACLs on the HTTP gateway, when the broker has an authorizer (authorizer.class.name).

Every request but /health and /ready must carry HTTP Basic credentials of a user the Kafka listeners
know: a PLAIN user of a SASL listener's JAAS configuration, or a SCRAM user (its password checked
against the stored salted keys; a verified password is remembered for a minute so that PBKDF2 does
not run on every request). A missing or wrong one is answered 401 (REST Proxy's 40101) with a
`WWW-Authenticate: Basic` challenge. The user's principal is `User:<name>`, the client's host its IP.

Then the route's ACL checks, the ones a Kafka client doing the same would need (403, 40301, when
denied): DESCRIBE on a topic to read its metadata, WRITE to produce, READ on the group for a
consumer instance and READ on the topics it subscribes to, is assigned or commits, READ on the share
group and its topics for a WebSocket queue, DESCRIBE on the cluster for /metrics and /v1/explain.
GET /topics lists only the topics the user may describe; a pattern subscription needs READ on the
topic "*" (topics it matches later are not checked again). A route with no entry here needs ALTER on
the cluster (an administrator), so that a new route is never open by accident.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from aiohttp import web

from kbroker.auth.acl import CLUSTER_NAME, AclOperation, ResourceType, java_host_address
from kbroker.config import ConfigError
from kbroker.sasl import SaslSettings
from kbroker.scram import ScramCredential

if TYPE_CHECKING:
    from kbroker.auth import Authorizer
    from kbroker.broker import Broker

log = structlog.get_logger("kbroker.http")

UNAUTHENTICATED = 40101
FORBIDDEN = 40301
OPEN_PATHS = frozenset({"/health", "/ready"})
V2_JSON = "application/vnd.kafka.v2+json"  # REST Proxy's error content type (rest/errors.py)
VERIFIED_SECONDS = 60.0
MAX_VERIFIED = 1024
PRINCIPAL_KEY = "kbroker.principal"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# what a route needs: (operation, resource type, where the name comes from)
#   "match:<name>": the URL part, "query:<name>": the query parameter (comma-separated list),
#   "body:<kind>": topics named in the JSON body, "cluster": the cluster
Check = tuple[AclOperation, ResourceType, str]

_READ, _WRITE, _DESCRIBE, _ALTER = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALTER
_TOPIC, _GROUP, _CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
_INSTANCE = "/consumers/{group}/instances/{instance}"
_GROUP_READ: Check = (_READ, _GROUP, "match:group")

ROUTE_CHECKS: dict[tuple[str, str], tuple[Check, ...]] = {
    ("GET", "/brokers"): (),
    ("GET", "/topics"): (),  # the handler lists only describable topics
    ("GET", "/topics/{topic}"): ((_DESCRIBE, _TOPIC, "match:topic"),),
    ("GET", "/topics/{topic}/partitions"): ((_DESCRIBE, _TOPIC, "match:topic"),),
    ("GET", "/topics/{topic}/partitions/{partition}"): ((_DESCRIBE, _TOPIC, "match:topic"),),
    ("POST", "/topics/{topic}"): ((_WRITE, _TOPIC, "match:topic"),),
    ("POST", "/topics/{topic}/partitions/{partition}"): ((_WRITE, _TOPIC, "match:topic"),),
    ("POST", "/consumers/{group}"): (_GROUP_READ,),
    ("DELETE", _INSTANCE): (_GROUP_READ,),
    ("POST", f"{_INSTANCE}/subscription"): (_GROUP_READ, (_READ, _TOPIC, "body:topics")),
    ("GET", f"{_INSTANCE}/subscription"): (_GROUP_READ,),
    ("DELETE", f"{_INSTANCE}/subscription"): (_GROUP_READ,),
    ("POST", f"{_INSTANCE}/assignments"): (_GROUP_READ, (_READ, _TOPIC, "body:partitions")),
    ("GET", f"{_INSTANCE}/assignments"): (_GROUP_READ,),
    ("POST", f"{_INSTANCE}/positions"): (_GROUP_READ, (_READ, _TOPIC, "body:offsets")),
    ("POST", f"{_INSTANCE}/positions/beginning"): (_GROUP_READ, (_READ, _TOPIC, "body:partitions")),
    ("POST", f"{_INSTANCE}/positions/end"): (_GROUP_READ, (_READ, _TOPIC, "body:partitions")),
    ("GET", f"{_INSTANCE}/records"): (_GROUP_READ,),  # its topics were checked when subscribed or assigned
    ("POST", f"{_INSTANCE}/offsets"): (_GROUP_READ, (_READ, _TOPIC, "body:offsets")),
    ("GET", f"{_INSTANCE}/offsets"): (_GROUP_READ, (_DESCRIBE, _TOPIC, "body:partitions")),
    ("GET", "/v1/queues/ws"): ((_READ, _GROUP, "query:group"), (_READ, _TOPIC, "query:topics")),
    ("GET", "/metrics"): ((_DESCRIBE, _CLUSTER, "cluster"),),
    ("GET", "/v1/explain/groups"): ((_DESCRIBE, _CLUSTER, "cluster"),),
    ("GET", "/v1/explain/transactions"): ((_DESCRIBE, _CLUSTER, "cluster"),),
}
DEFAULT_CHECKS: tuple[Check, ...] = ((_ALTER, _CLUSTER, "cluster"),)


@dataclass(frozen=True)
class HttpUser:
    principal: str
    host: str


class BasicAuthenticator:
    """HTTP Basic credentials checked against the Kafka listeners' PLAIN users and the SCRAM store."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.plain_users: dict[str, str] = {}
        for listener in broker.config.listeners:
            if listener.protocol.startswith("SASL_"):
                try:
                    self.plain_users.update(SaslSettings.from_config(broker.config, listener.name).plain_users)
                except ConfigError:  # the Kafka listener refused the same settings at start
                    continue
        self._verified: dict[tuple[str, bytes], float] = {}

    def check(self, user: str, password: str) -> bool:
        expected = self.plain_users.get(user)
        if expected is not None:
            return hmac.compare_digest(expected.encode(), password.encode())
        key = (user, hashlib.sha256(f"{user}\0{password}".encode()).digest())
        now = time.monotonic()
        if self._verified.get(key, 0.0) > now:
            return True
        if not self._scram_matches(user, password):
            return False
        if len(self._verified) >= MAX_VERIFIED:
            self._verified = {k: t for k, t in self._verified.items() if t > now}
            if len(self._verified) >= MAX_VERIFIED:
                self._verified.clear()
        self._verified[key] = now + VERIFIED_SECONDS
        return True

    def _scram_matches(self, user: str, password: str) -> bool:
        store = self.broker.scram
        if store is None:
            return False
        for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
            stored = store.get(user, mechanism)
            if stored is not None:
                candidate = ScramCredential.from_password(mechanism, password, stored.salt, stored.iterations)
                return hmac.compare_digest(candidate.stored_key, stored.stored_key)
        return False


def auth_middleware(
    broker: Broker, authorizer: Authorizer
) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    authenticator = BasicAuthenticator(broker)

    @web.middleware
    async def authenticate_and_authorize(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in OPEN_PATHS:
            return await handler(request)
        user = _basic_user(request, authenticator)
        if user is None:
            log.info("http_authentication_failed", path=request.path, peer=request.remote)
            response = _error(401, UNAUTHENTICATED, "Authentication required: HTTP Basic with a Kafka user.")
            response.headers["WWW-Authenticate"] = 'Basic realm="kbroker"'
            return response
        request[PRINCIPAL_KEY] = user
        route = request.match_info.route.resource
        canonical = route.canonical if route is not None else request.path
        method = "GET" if request.method == "HEAD" else request.method
        checks = ROUTE_CHECKS.get((method, canonical), DEFAULT_CHECKS)
        for operation, resource_type, source in checks:
            for name in await _names(request, source):
                if not authorizer.authorize(user.principal, user.host, operation, resource_type, name):
                    log.info(
                        "authorization_denied",
                        principal=user.principal,
                        host=user.host,
                        operation=operation.name,
                        resource_type=resource_type.name,
                        resources=1,
                        first=[name],
                        path=request.path,
                    )
                    message = f"Not authorized: {operation.name} on {resource_type.name} {name}"
                    return _error(403, FORBIDDEN, message)
        return await handler(request)

    return authenticate_and_authorize


def _error(status: int, code: int, message: str) -> web.Response:
    return web.json_response({"error_code": code, "message": message}, status=status, content_type=V2_JSON)


def visible_topics(request: web.Request, broker: Broker, names: Iterable[str]) -> list[str]:
    """The topics the request's user may describe (all of them without an authorizer)."""
    user = request.get(PRINCIPAL_KEY)
    authorizer = broker.authorizer
    if authorizer is None or not isinstance(user, HttpUser):
        return list(names)
    return [n for n in names if authorizer.authorize(user.principal, user.host, _DESCRIBE, _TOPIC, n)]


def may_write(request: web.Request, broker: Broker, topic: str) -> bool:
    """Whether the request's user may WRITE to the topic (a produce over a WebSocket queue)."""
    user = request.get(PRINCIPAL_KEY)
    authorizer = broker.authorizer
    if authorizer is None or not isinstance(user, HttpUser):
        return True
    return authorizer.authorize(user.principal, user.host, AclOperation.WRITE, ResourceType.TOPIC, topic)


def _basic_user(request: web.Request, authenticator: BasicAuthenticator) -> HttpUser | None:
    header = request.headers.get("Authorization", "")
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    if not sep or not user or not authenticator.check(user, password):
        return None
    return HttpUser(f"User:{user}", java_host_address(request.remote or ""))


async def _names(request: web.Request, source: str) -> list[str]:
    kind, _, key = source.partition(":")
    if kind == "cluster":
        return [CLUSTER_NAME]
    if kind == "match":
        return [request.match_info[key]]
    if kind == "query":
        return [n for n in request.query.get(key, "").split(",") if n] or [""]
    return _body_topics(await _json_body(request), key)


async def _json_body(request: web.Request) -> Any:
    if not request.can_read_body:
        return None
    try:
        return await request.json()
    except ValueError:
        return None  # the handler answers the malformed body


def _body_topics(body: Any, key: str) -> list[str]:
    """Topic names a consumer request names: {"topics": [...]} or {"partitions"/"offsets": [{"topic": ...}]}.
    A pattern subscription ({"topic_pattern": ...}) may match topics created later: it needs READ on the
    wildcard resource "*" (an ACL for every topic)."""
    if key == "topics" and isinstance(body, dict) and body.get("topic_pattern") is not None:
        return ["*"]
    if not isinstance(body, dict) or not isinstance(body.get(key), list):
        return []
    items = body[key]
    if key == "topics":
        return [t for t in items if isinstance(t, str)]
    return [item["topic"] for item in items if isinstance(item, dict) and isinstance(item.get("topic"), str)]
