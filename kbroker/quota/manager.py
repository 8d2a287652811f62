"""Quota enforcement, as Kafka's ClientQuotaManager family does it, with an injected clock.

One `ClientQuotaManager` per quota type (produce bytes, fetch bytes, request time) meters each client
in a `WindowedRate` named by the tags the store's precedence gives (kbroker.quota.store), records
each request's value and answers the throttle time when the measured rate exceeds the quota (Kafka's
QuotaUtils.throttleTime; the request-time quota caps it at one window). The controller mutation quota
(KIP-599) meters partition mutations in a `TokenBucket`: strict for CreateTopics v6+, CreatePartitions
v3+ and DeleteTopics v5+ (a topic arriving while the bucket is in debt is refused with
THROTTLING_QUOTA_EXCEEDED), permissive before (accepted, the client only throttled).

`Quotas.after_request` is what the request pipeline calls once a response is ready: it records the
request's handling time (request_percentage) and, for Produce, its size (producer_byte_rate), and
returns the largest throttle time the request earned, Fetch's and the mutations' included (their
handlers put them in `ctx.throttle_ms`). Nothing is metered while no entity sets the quota type.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbroker.quota.rate import TokenBucket, WindowedRate, throttle_time_ms
from kbroker.quota.store import (
    CONNECTION_CREATION_RATE,
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotaStore,
    Tags,
)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kbroker.config import BrokerConfig
    from kbroker.context import RequestContext

INACTIVE_SENSOR_EXPIRATION_MS = 3600 * 1000  # Kafka forgets a client's sensors after an hour without traffic
# APIs that are never throttled: what a client must be able to send before it knows about quotas
EXEMPT_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


def monotonic_ms() -> float:
    return time.monotonic() * 1000


def user_of(principal: str) -> str:
    """The user a quota entity names: the principal without its type (User:alice -> alice)."""
    return principal.partition(":")[2] or principal


@dataclass(slots=True)
class _Meter:
    rate: WindowedRate
    last_used_ms: float


class ClientQuotaManager:
    """Byte-rate or request-time quotas of one kind (`key`), metered per client."""

    def __init__(
        self, key: str, store: ClientQuotaStore, samples: int, window_ms: float, max_throttle_ms: int | None = None
    ) -> None:
        self.key = key
        self.store = store
        self.samples = samples
        self.window_ms = window_ms
        self.max_throttle_ms = max_throttle_ms
        self._meters: dict[Tags, _Meter] = {}
        self._next_expiry_ms = 0.0

    @property
    def enabled(self) -> bool:
        return self.store.in_use(self.key)

    def record(self, user: str, client_id: str, value: float, now_ms: float) -> int:
        """Record `value` for this client; the throttle time in ms (0 within quota)."""
        resolved = self.store.lookup(self.key, user, client_id)
        if resolved is None:
            return 0
        rate = self._meter(resolved.tags, now_ms)
        rate.record(value, now_ms)
        observed = rate.measure(now_ms)
        if observed <= resolved.bound:
            return 0
        throttle = throttle_time_ms(observed, resolved.bound, rate.window_size(now_ms))
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return max(throttle, 0)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: float) -> None:
        """Take back a recorded value (a throttled fetch returns nothing)."""
        resolved = self.store.lookup(self.key, user, client_id)
        if resolved is not None:
            self._meter(resolved.tags, now_ms).record(-value, now_ms)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most this client may take in one quota window without being throttled (Kafka caps
        a fetch's max_bytes to it); None without a quota."""
        resolved = self.store.lookup(self.key, user, client_id)
        if resolved is None:
            return None
        return resolved.bound * (self.samples - 1) * self.window_ms / 1000

    def _meter(self, tags: Tags, now_ms: float) -> WindowedRate:
        meter = self._meters.get(tags)
        if meter is None:
            if now_ms >= self._next_expiry_ms:
                self._expire(now_ms)
            meter = self._meters[tags] = _Meter(WindowedRate(self.samples, self.window_ms), now_ms)
        meter.last_used_ms = now_ms
        return meter.rate

    def _expire(self, now_ms: float) -> None:
        """Forget clients idle for an hour, so many client ids cost bounded memory."""
        self._meters = {
            tags: meter
            for tags, meter in self._meters.items()
            if now_ms - meter.last_used_ms < INACTIVE_SENSOR_EXPIRATION_MS
        }
        self._next_expiry_ms = now_ms + 60_000


class ControllerMutationQuotaManager:
    """controller_mutation_rate: partitions created or deleted per second, in a token bucket per client."""

    def __init__(self, store: ClientQuotaStore, samples: int, window_ms: float) -> None:
        self.store = store
        self.samples = samples
        self.window_ms = window_ms
        self._buckets: dict[Tags, TokenBucket] = {}

    @property
    def enabled(self) -> bool:
        return self.store.in_use(CONTROLLER_MUTATION_RATE)

    def record(self, user: str, client_id: str, permits: float, now_ms: float, strict: bool) -> tuple[bool, int]:
        """(accepted, throttle ms) for `permits` partition mutations. Strict: refused while the
        bucket is in debt (and nothing recorded); permissive: always recorded and accepted."""
        resolved = self.store.lookup(CONTROLLER_MUTATION_RATE, user, client_id)
        if resolved is None:
            return True, 0
        bucket = self._buckets.get(resolved.tags)
        if bucket is None:
            bucket = self._buckets[resolved.tags] = TokenBucket(resolved.bound, self.samples, self.window_ms)
        elif bucket.quota != resolved.bound:
            bucket.set_quota(resolved.bound, self.samples, self.window_ms)
        if strict:
            throttle = bucket.throttle_time_ms(now_ms)
            if throttle > 0:
                return False, throttle
            bucket.record(permits, now_ms)
            return True, 0
        bucket.record(permits, now_ms)
        return True, bucket.throttle_time_ms(now_ms)


@dataclass(eq=False)
class Quotas:
    """The broker's client quotas: the store and one manager per quota type."""

    store: ClientQuotaStore
    samples: int = 11  # quota.window.num
    window_ms: float = 1000.0  # quota.window.size.seconds
    controller_samples: int = 11  # controller.quota.window.num
    controller_window_ms: float = 1000.0  # controller.quota.window.size.seconds
    clock: Callable[[], float] = monotonic_ms
    produce: ClientQuotaManager = field(init=False)
    fetch: ClientQuotaManager = field(init=False)
    request: ClientQuotaManager = field(init=False)
    controller_mutation: ControllerMutationQuotaManager = field(init=False)
    _connection_meters: dict[str, _Meter] = field(init=False, default_factory=dict)  # per ip

    def __post_init__(self) -> None:
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE, self.store, self.samples, self.window_ms)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE, self.store, self.samples, self.window_ms)
        self.request = ClientQuotaManager(
            REQUEST_PERCENTAGE, self.store, self.samples, self.window_ms, max_throttle_ms=int(self.window_ms)
        )
        self.controller_mutation = ControllerMutationQuotaManager(
            self.store, self.controller_samples, self.controller_window_ms
        )

    def after_request(self, ctx: RequestContext, handling_seconds: float, acks_zero: bool = False) -> int:
        """Record what this request cost its client; the throttle time its response carries and the
        connection is muted for (the largest of its quota types')."""
        if ctx.api_key in EXEMPT_APIS:
            return ctx.throttle_ms
        user, client_id = user_of(ctx.principal), ctx.client_id or ""
        now = self.clock()
        throttle = ctx.throttle_ms
        if ctx.api_key == ApiKey.PRODUCE and self.produce.enabled:
            throttle = max(throttle, self.produce.record(user, client_id, ctx.request_size, now))
        if self.request.enabled and not acks_zero:
            percentage = handling_seconds * 100.0  # Kafka: request thread nanos * 100 / 1e9
            throttle = max(throttle, self.request.record(user, client_id, percentage, now))
        return throttle

    def fetch_throttle(self, ctx: RequestContext, response_size: int) -> int:
        """Record a consumer fetch's response size; when it must be throttled the bytes are taken
        back, as the answer will be empty (KafkaApis.handleFetchRequest)."""
        if not self.fetch.enabled:
            return 0
        user, client_id = user_of(ctx.principal), ctx.client_id or ""
        now = self.clock()
        throttle = self.fetch.record(user, client_id, response_size, now)
        if throttle > 0:
            self.fetch.unrecord(user, client_id, response_size, now)
        return throttle

    def fetch_max_bytes(self, ctx: RequestContext) -> int | None:
        if not self.fetch.enabled:
            return None
        limit = self.fetch.max_value_in_window(user_of(ctx.principal), ctx.client_id or "")
        return None if limit is None else int(min(limit, 2**31 - 1))

    def connection_throttle(self, ip: str) -> int:
        """connection_creation_rate for a new connection from `ip`: 0 to accept it, else how long to
        hold it before closing it (and it is not counted), as Kafka's ConnectionQuotas does."""
        bound = self.store.ip_quota(ip) if self.store.in_use(CONNECTION_CREATION_RATE) else None
        if bound is None:
            return 0
        now = self.clock()
        meter = self._connection_meters.get(ip)
        if meter is None:
            if len(self._connection_meters) > 10_000:  # many addresses: forget the idle ones
                self._connection_meters = {
                    k: m for k, m in self._connection_meters.items() if now - m.last_used_ms < 60_000
                }
            meter = self._connection_meters[ip] = _Meter(WindowedRate(self.samples, self.window_ms), now)
        meter.last_used_ms = now
        meter.rate.record(1, now)
        observed = meter.rate.measure(now)
        if observed <= bound:
            return 0
        meter.rate.record(-1, now)
        return min(throttle_time_ms(observed, bound, meter.rate.window_size(now)), int(self.window_ms))

    def mutation(self, ctx: RequestContext, permits: float, strict: bool) -> ErrorCode | None:
        """Account `permits` partition mutations; THROTTLING_QUOTA_EXCEEDED when a strict request
        must be refused. The request's throttle time goes to ctx.throttle_ms."""
        if not self.controller_mutation.enabled:
            return None
        accepted, throttle = self.controller_mutation.record(
            user_of(ctx.principal), ctx.client_id or "", permits, self.clock(), strict
        )
        ctx.throttle_ms = max(ctx.throttle_ms, throttle)
        return None if accepted else ErrorCode.THROTTLING_QUOTA_EXCEEDED


def new_quotas(config: BrokerConfig, clock: Callable[[], float] = monotonic_ms) -> Quotas:
    """The quotas kept in the data directory, with the broker's window settings; `clock` in ms."""
    return Quotas(
        ClientQuotaStore.load(config.data_dir),
        clock=clock,
        samples=config.get_int("quota.window.num"),
        window_ms=config.get_int("quota.window.size.seconds") * 1000.0,
        controller_samples=config.get_int("controller.quota.window.num"),
        controller_window_ms=config.get_int("controller.quota.window.size.seconds") * 1000.0,
    )
