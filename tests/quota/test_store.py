"""Client quota entities: Kafka's validation and error messages, describe filters, precedence, durability."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbroker.quota.store import ClientQuotaStore, QuotaRequestError
from protocol.errors import ErrorCode

Entity = list[tuple[str, str | None]]


def entry(entity: Entity, *ops: tuple[str, float | None]) -> dict[str, Any]:
    return {
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
        "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in ops],
    }


def alter(store: ClientQuotaStore, *entries: dict[str, Any], validate_only: bool = False) -> list[tuple[int, str]]:
    return [(r["error_code"], r["error_message"]) for r in store.alter(list(entries), validate_only)]


OK = (0, None)
BAD = int(ErrorCode.INVALID_REQUEST)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (entry([], ("producer_byte_rate", 1)), "Invalid empty client quota entity"),
        (entry([("group", "g")], ("producer_byte_rate", 1)), "Unhandled client quota entity type: group"),
        (entry([("user", "")], ("producer_byte_rate", 1)), "Empty user not supported"),
        (entry([("ip", "1.2.3.4"), ("user", "a")], ("connection_creation_rate", 1)),
         "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
        (entry([("ip", "no such host.invalid")], ("connection_creation_rate", 1)),
         "no such host.invalid is not a valid IP or resolvable host."),
        (entry([("ip", "1.2.3.4")], ("producer_byte_rate", 1)), "Invalid configuration key producer_byte_rate"),
        (entry([("user", "a")], ("connection_creation_rate", 1)), "Invalid configuration key connection_creation_rate"),
        (entry([("user", "a")], ("producer_byte_rate", 0)), "Quota producer_byte_rate must be greater than 0"),
        (entry([("user", "a")], ("consumer_byte_rate", 1.5)), "consumer_byte_rate cannot be a fractional value."),
        (entry([("ip", None)], ("connection_creation_rate", 2**31)),
         "Proposed value for connection_creation_rate is too large for an INT."),
        (entry([("user", "a")], ("producer_byte_rate", 1), ("producer_byte_rate", 2)),
         "Duplicate quota key producer_byte_rate not updating quota for this entity "
         "ClientQuotaEntity(entries={user=a})"),
    ],
)  # fmt: skip
def test_kafkas_checks_and_messages(bad: dict[str, Any], message: str) -> None:
    store = ClientQuotaStore()
    assert alter(store, bad, entry([("client-id", "c")], ("request_percentage", 12.5))) == [(BAD, message), OK]
    assert store.quotas == {(("client-id", "c"),): {"request_percentage": 12.5}}


def test_a_type_named_twice_keeps_its_last_name() -> None:
    """As Kafka reads an AlterClientQuotas request (the entity is a map): answered and applied as user b."""
    store = ClientQuotaStore()
    (result,) = store.alter([entry([("user", "a"), ("user", "b")], ("producer_byte_rate", 1))], False)
    assert (result["error_code"], result["entity"]) == (0, [{"entity_type": "user", "entity_name": "b"}])
    assert store.quotas == {(("user", "b"),): {"producer_byte_rate": 1}}


def test_validate_only_changes_nothing_and_removing_the_last_key_drops_the_entity(tmp_path: Path) -> None:
    store = ClientQuotaStore(tmp_path / "client-quotas.json")
    assert alter(store, entry([("user", "a")], ("producer_byte_rate", 1024)), validate_only=True) == [OK]
    assert store.quotas == {} and not (tmp_path / "client-quotas.json").exists()
    assert alter(store, entry([("user", "a")], ("producer_byte_rate", 1024), ("consumer_byte_rate", 2048))) == [OK]
    assert alter(store, entry([("user", "a")], ("producer_byte_rate", None))) == [OK]
    assert store.quotas == {(("user", "a"),): {"consumer_byte_rate": 2048}}
    assert alter(store, entry([("user", "a")], ("consumer_byte_rate", None), ("request_percentage", None))) == [OK]
    assert store.quotas == {} and not store.in_use("consumer_byte_rate")


def test_quotas_survive_a_restart(tmp_path: Path) -> None:
    store = ClientQuotaStore.load(tmp_path)
    alter(store, entry([("user", None), ("client-id", "c")], ("producer_byte_rate", 1024)))
    alter(store, entry([("ip", "10.0.0.1")], ("connection_creation_rate", 5)))
    again = ClientQuotaStore.load(tmp_path)
    assert again.quotas == store.quotas
    assert again.in_use("producer_byte_rate") and again.ip_quota("10.0.0.1") == 5 and again.ip_quota("10.0.0.2") is None


def test_precedence_from_the_most_specific_entity() -> None:
    store = ClientQuotaStore()
    levels: list[tuple[Entity, float]] = [
        ([("user", "u"), ("client-id", "c")], 1),
        ([("user", "u"), ("client-id", None)], 2),
        ([("user", "u")], 3),
        ([("user", None), ("client-id", "c")], 4),
        ([("user", None), ("client-id", None)], 5),
        ([("user", None)], 6),
        ([("client-id", "c")], 7),
        ([("client-id", None)], 8),
    ]
    for entity, value in levels:
        alter(store, entry(entity, ("producer_byte_rate", value)))
    expected_tags = [("u", "c"), ("u", "c"), ("u", ""), ("u", "c"), ("u", "c"), ("u", ""), ("", "c"), ("", "c")]
    for (entity, value), tags in zip(levels, expected_tags, strict=True):
        resolved = store.lookup("producer_byte_rate", "u", "c")
        assert resolved is not None and (resolved.bound, resolved.tags) == (value, tags)
        alter(store, entry(entity, ("producer_byte_rate", None)))
    assert store.lookup("producer_byte_rate", "u", "c") is None


def test_a_key_not_set_at_one_level_falls_through_to_the_next() -> None:
    store = ClientQuotaStore()
    alter(store, entry([("user", "u")], ("consumer_byte_rate", 10)))
    alter(store, entry([("client-id", None)], ("producer_byte_rate", 20)))
    assert store.lookup("producer_byte_rate", "u", "c").bound == 20  # type: ignore[union-attr]
    assert store.lookup("producer_byte_rate", "u", "") is None  # no client id: only user entities apply


def _names(entries: list[dict[str, Any]]) -> list[list[tuple[str, str | None]]]:
    return sorted([(e["entity_type"], e["entity_name"]) for e in item["entity"]] for item in entries)


def test_describe_filters() -> None:
    store = ClientQuotaStore()
    for entity in ([("user", "u")], [("user", None)], [("user", "u"), ("client-id", "c")], [("client-id", "c")]):
        alter(store, entry(entity, ("request_percentage", 10)))
    alter(store, entry([("ip", None)], ("connection_creation_rate", 10)))
    exact_user = {"entity_type": "user", "match_type": 0, "match": "u"}
    any_user = {"entity_type": "user", "match_type": 2, "match": None}
    default_user = {"entity_type": "user", "match_type": 1, "match": None}
    assert _names(store.describe([exact_user], strict=False)) == [
        [("client-id", "c"), ("user", "u")],
        [("user", "u")],
    ]
    assert _names(store.describe([exact_user], strict=True)) == [[("user", "u")]]
    assert _names(store.describe([default_user], strict=True)) == [[("user", None)]]
    assert len(store.describe([any_user], strict=False)) == 3
    assert len(store.describe([], strict=False)) == 5
    assert store.describe([], strict=True) == []


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        ([{"entity_type": "", "match_type": 2, "match": None}], BAD, "Invalid empty entity type."),
        ([{"entity_type": "group", "match_type": 2, "match": None}], int(ErrorCode.UNSUPPORTED_VERSION),
         "Unsupported entity type group"),
        ([{"entity_type": "user", "match_type": 0, "match": None}], BAD,
         "Request specified MATCH_TYPE_EXACT, but set match string to null."),
        ([{"entity_type": "user", "match_type": 1, "match": "x"}], BAD,
         "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
        ([{"entity_type": "user", "match_type": 7, "match": None}], BAD, "Unknown match type 7"),
        ([{"entity_type": "user", "match_type": 2, "match": None}] * 2, BAD,
         "Entity type user cannot appear more than once in the filter."),
        ([{"entity_type": "ip", "match_type": 2, "match": None}, {"entity_type": "user", "match_type": 2,
          "match": None}], BAD, "Invalid entity filter component combination. IP filter component should not be "
         "used with user or clientId filter component."),
    ],
)  # fmt: skip
def test_describe_refuses_bad_filters(components: list[dict[str, Any]], code: int, message: str) -> None:
    with pytest.raises(QuotaRequestError) as raised:
        ClientQuotaStore().describe(components, strict=False)
    assert (int(raised.value.code), str(raised.value)) == (code, message)
