"""ApiVersions' feature levels (KIP-584) against a real kbroker."""

from __future__ import annotations

from kbroker.features import FEATURES
from protocol.api_keys import ApiKey
from tests.process import RawClient


def _api_versions(raw: RawClient, version: int) -> dict:
    return dict(raw.call(ApiKey.API_VERSIONS, version, {"client_software_name": "t", "client_software_version": "1"}))


def test_v4_lists_every_supported_feature(raw: RawClient) -> None:
    response = _api_versions(raw, 4)
    supported = {f["name"]: (f["min_version"], f["max_version"]) for f in response["supported_features"]}
    assert supported == {"group.version": (0, 1), "transaction.version": (0, 2), "share.version": (0, 1)}
    assert response["finalized_features_epoch"] == 0


def test_transaction_version_is_finalized_at_2(raw: RawClient) -> None:
    # A 4.x producer switches to transactions v2 (KIP-890) at transaction.version >= 2, as with Kafka 4.3
    finalized = {f["name"]: f["max_version_level"] for f in _api_versions(raw, 4)["finalized_features"]}
    assert finalized.get("transaction.version") == 2
    assert finalized.get("group.version") == 1  # consumer-protocol groups (KIP-848), as Kafka 4.x
    assert finalized.get("share.version") == 1  # share groups, as Kafka 4.3 finalizes them
    assert all(level > 0 for level in finalized.values()), "a level-0 feature is never listed as finalized"


def test_v3_leaves_out_features_whose_minimum_is_0(raw: RawClient) -> None:
    response = _api_versions(raw, 3)
    expected = [f.name for f in FEATURES if f.min_version > 0]
    assert [f["name"] for f in response["supported_features"]] == expected
