"""Kafka's quota arithmetic with a fake clock: the windowed rate, throttle times, the token bucket."""

from __future__ import annotations

import pytest

from kbroker.quota.manager import ClientQuotaManager, ControllerMutationQuotaManager
from kbroker.quota.rate import TokenBucket, WindowedRate, throttle_time_ms
from kbroker.quota.store import ClientQuotaStore

T0 = 1_000_000.0  # any origin: a monotonic clock in ms


def test_a_new_rate_is_spread_over_the_whole_window() -> None:
    rate = WindowedRate(samples=11, window_ms=1000)
    rate.record(10_000, T0)
    # one sample so far: Kafka measures over (samples - 1) windows, not over the 0 ms elapsed
    assert rate.window_size(T0) == 10_000
    assert rate.measure(T0) == pytest.approx(1000.0)


def test_the_rate_follows_a_steady_stream_and_forgets_old_samples() -> None:
    rate = WindowedRate(samples=11, window_ms=1000)
    for tick in range(30_000 // 100):  # 100 units every 100 ms: 1000 per second for 30 s
        rate.record(100, T0 + tick * 100)
    now = T0 + 29_900
    assert rate.measure(now) == pytest.approx(1000.0, rel=0.1)
    assert 10_000 <= rate.window_size(now) <= 11_000
    assert rate.measure(now + 11_000) == 0.0  # every sample older than samples * window: reset


def test_throttle_time_brings_the_rate_back_to_the_bound() -> None:
    # observed 2000/s over 10 s with a bound of 1000/s: wait 10 s more (2000 * 10 / (10 + 10) = 1000)
    assert throttle_time_ms(2000, 1000, 10_000) == 10_000
    assert throttle_time_ms(1100, 1000, 10_000) == 1000


def _simulate(manager: ClientQuotaManager, request_bytes: int, seconds: int) -> list[int]:
    """A client sending as fast as the broker lets it (each request waits out the previous throttle,
    5 ms per round trip otherwise); the bytes it had sent at each whole second."""
    now, sent, marks = T0, 0, [0]
    while now < T0 + seconds * 1000:
        throttle = manager.record("ANONYMOUS", "fast", request_bytes, now)
        sent += request_bytes
        now += max(throttle, 5)
        while len(marks) <= (now - T0) // 1000:
            marks.append(sent)
    return marks


def _manager(samples: int) -> ClientQuotaManager:
    store = ClientQuotaStore()
    store.alter([_entry([("client-id", "fast")], "producer_byte_rate", 1_048_576)], validate_only=False)
    return ClientQuotaManager("producer_byte_rate", store, samples=samples, window_ms=1000)


@pytest.mark.parametrize("request_bytes", [16_384, 65_536])
def test_a_throttled_client_gets_its_quota_within_ten_percent(request_bytes: int) -> None:
    # Kafka's default 11 windows of 1 s: a quiet client may send a burst of 10 windows' worth at once,
    # after which it is held back until the burst leaves the window, 11 s later: over whole cycles
    # the rate is the quota.
    marks = _simulate(_manager(11), request_bytes, seconds=34)
    assert marks[33] / 33 == pytest.approx(1_048_576, rel=0.1)
    assert marks[4] > 9 * 1_048_576  # the first burst
    # With 2 windows the burst is one window's worth, and every 10 s span past the start is within 10%.
    marks = _simulate(_manager(2), request_bytes, seconds=25)
    for start in range(2, 14):
        assert (marks[start + 10] - marks[start]) / 10 == pytest.approx(1_048_576, rel=0.1), start


def test_request_time_throttle_is_capped_at_one_window() -> None:
    store = ClientQuotaStore()
    store.alter([_entry([("user", None)], "request_percentage", 1)], validate_only=False)
    manager = ClientQuotaManager("request_percentage", store, 11, 1000, max_throttle_ms=1000)
    assert manager.record("bob", "c", 5000.0, T0) == 1000  # 50 s of handling in one go


def test_the_token_bucket_starts_full_goes_into_debt_once_and_refills() -> None:
    bucket = TokenBucket(quota=10, samples=11, window_ms=1000)
    assert bucket.measure(T0) == 110  # burst: 11 windows of 1 s at 10 per second
    bucket.record(150, T0)
    assert bucket.measure(T0) == -40
    assert bucket.throttle_time_ms(T0) == 4000
    assert bucket.throttle_time_ms(T0 + 4000) == 0
    assert bucket.measure(T0 + 100_000) == 110


def test_strict_mutations_are_refused_while_in_debt_permissive_ones_only_throttled() -> None:
    store = ClientQuotaStore()
    store.alter([_entry([("client-id", "admin")], "controller_mutation_rate", 10)], validate_only=False)
    mutations = ControllerMutationQuotaManager(store, samples=11, window_ms=1000)
    assert mutations.record("ANONYMOUS", "admin", 200, T0, strict=True) == (True, 0)  # accepted into debt
    assert mutations.record("ANONYMOUS", "admin", 1, T0 + 1000, strict=True) == (False, 8000)
    assert mutations.record("ANONYMOUS", "admin", 1, T0 + 1000, strict=False) == (True, 8100)
    assert mutations.record("ANONYMOUS", "other", 500, T0, strict=True) == (True, 0)  # no quota for it


def _entry(entity: list[tuple[str, str | None]], key: str, value: float, remove: bool = False) -> dict[str, object]:
    return {
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
        "ops": [{"key": key, "value": value, "remove": remove}],
    }


def test_connection_creation_rate_per_ip_with_a_default() -> None:
    from kbroker.quota.manager import Quotas

    clock = [T0]
    store = ClientQuotaStore()
    store.alter([_entry([("ip", None)], "connection_creation_rate", 2)], validate_only=False)
    store.alter([_entry([("ip", "10.0.0.9")], "connection_creation_rate", 100)], validate_only=False)
    quotas = Quotas(store, clock=lambda: clock[0])
    # 2 per second measured over 10 s for a new address: 20 connections at once, the 21st held
    assert [quotas.connection_throttle("10.0.0.1") for _ in range(20)] == [0] * 20
    held = quotas.connection_throttle("10.0.0.1")
    assert 0 < held <= 1000  # capped at one window, as Kafka caps it
    assert quotas.connection_throttle("10.0.0.2") == 0  # another address has its own meter
    assert all(quotas.connection_throttle("10.0.0.9") == 0 for _ in range(500))  # its own, higher quota
    clock[0] += 1000  # 21 over (1 s elapsed + 9 padded windows): still 2.1 per second
    assert quotas.connection_throttle("10.0.0.1") > 0
    clock[0] += 500  # the refused ones were not counted: 21 over 10.5 s fits
    assert quotas.connection_throttle("10.0.0.1") == 0
