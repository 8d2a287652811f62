"""Fault injection's answers, without a broker: the wrapped registry, error answers per API."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kbroker.handlers.registry import load_handlers
from kbroker.testing.faults import Faults, api_key_of, error_answer, error_code_of
from protocol.api_keys import ApiKey
from protocol.codec import encode
from protocol.errors import ErrorCode

HANDLERS = load_handlers()


def test_names_and_codes() -> None:
    assert api_key_of("Produce") == api_key_of("PRODUCE") == api_key_of(0) == 0
    assert api_key_of("list_offsets") == api_key_of("list-offsets") == 2
    assert api_key_of("ListOffsets") == ApiKey.LIST_OFFSETS
    assert error_code_of("not_leader_or_follower") == error_code_of(6) == 6
    with pytest.raises(ValueError):
        api_key_of("Nope")
    with pytest.raises(ValueError):
        error_code_of("NOPE")


def test_wrapped_registry_keeps_every_api_and_version() -> None:
    wrapped = Faults().wrap(HANDLERS)
    assert wrapped.keys() == HANDLERS.keys()
    for key, handler in wrapped.items():
        original = HANDLERS[key]
        assert (handler.min_version, handler.max_version, handler.advertised_min) == (
            original.min_version,
            original.max_version,
            original.advertised_min,
        )


def test_no_fault_calls_the_handler_as_it_is() -> None:
    faults = Faults()
    seen: list[Any] = []
    handler = HANDLERS[ApiKey.API_VERSIONS]
    fake = dataclasses.replace(handler, func=lambda ctx, body: seen.append(body) or {"error_code": 0})
    wrapped = faults.wrap({handler.api_key: fake})[handler.api_key]
    assert wrapped.func(None, {"x": 1}) == {"error_code": 0}  # type: ignore[arg-type]
    assert seen == [{"x": 1}] and not faults.active
    faults.fail("ApiVersions", "UNSUPPORTED_VERSION", count=1)
    assert faults.active
    ctx = type("Ctx", (), {"api_version": 3, "connection_id": 1})()
    assert wrapped.func(ctx, {"x": 2}) == {"error_code": ErrorCode.UNSUPPORTED_VERSION}  # type: ignore[arg-type]
    assert seen == [{"x": 1}] and not faults.active  # not handled; the fault is spent
    assert faults.injected == 1


@pytest.mark.parametrize(
    ("api", "request_body"),
    [
        (
            ApiKey.PRODUCE,
            {"acks": -1, "timeout_ms": 1, "topic_data": [{"name": "t", "partition_data": [{"index": 0}]}]},
        ),
        (ApiKey.FETCH, {"topics": [{"topic": "t", "partitions": [{"partition": 2}]}]}),
        (ApiKey.LIST_OFFSETS, {"topics": [{"name": "t", "partitions": [{"partition_index": 1}]}]}),
        (ApiKey.FIND_COORDINATOR, {"key": "g"}),
    ],
)
def test_error_answers_encode_in_every_version(api: int, request_body: dict[str, Any]) -> None:
    handler = HANDLERS[api]
    code = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    for version in range(handler.min_version, handler.max_version + 1):
        answer = error_answer(handler, version, request_body, code)
        assert answer is not None
        assert code in _error_codes(answer)
        encode(handler.response, version, answer)  # a complete answer for the codec


def test_no_error_answer_for_produce_acks_0() -> None:
    body = {"acks": 0, "topic_data": [{"name": "t", "partition_data": [{"index": 0}]}]}
    assert error_answer(HANDLERS[ApiKey.PRODUCE], 9, body, 6) is None


def _error_codes(value: Any) -> list[int]:
    if isinstance(value, dict):
        found = [value["error_code"]] if "error_code" in value else []
        return found + [c for v in value.values() for c in _error_codes(v)]
    if isinstance(value, list):
        return [c for v in value for c in _error_codes(v)]
    return []
