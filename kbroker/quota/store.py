"""Client quotas as Kafka keeps them (ClientQuotaControlManager, ClientQuotasImage): an entity (user,
client-id, user + client-id, or ip; a null name is the entity type's default) maps quota keys to values.

AlterClientQuotas validates as Kafka's controller does (known entity types, no empty names, ip alone,
the keys each entity type takes, positive values, integral values for integral keys) and answers
INVALID_REQUEST with Kafka's messages; DescribeClientQuotas filters by exact, default and "any
specified" components, strict or not. Stored in `<data-dir>/client-quotas.json`, written atomically
before the answer.

`lookup` resolves the quota of a (user, client-id) pair with Kafka's precedence (most specific first):
user + client-id, user + default client-id, user, default user + client-id, default user + default
client-id, default user, client-id, default client-id. It also names the sensor that meters the pair:
a quota set for a user alone is shared by all that user's clients, and so on.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from kbroker.config_defs import ConfigError
from kbroker.log.checkpoint import write_atomically
from kbroker.quota import FILE_NAME
from protocol.errors import ErrorCode

log = structlog.get_logger(__name__)

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
# key -> whether it must be integral (Kafka's LONG/INT keys) and its largest value
_USER_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: (True, float(2**63 - 1), "a LONG"),
    CONSUMER_BYTE_RATE: (True, float(2**63 - 1), "a LONG"),
    REQUEST_PERCENTAGE: (False, float("inf"), ""),
    CONTROLLER_MUTATION_RATE: (False, float("inf"), ""),
}
_IP_KEYS = {CONNECTION_CREATION_RATE: (True, float(2**31 - 1), "an INT")}
_SCRAM_KEYS = ("SCRAM-SHA-256", "SCRAM-SHA-512")  # user configs of another kind; Kafka fails them as here

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple[tuple[str, str | None], ...]  # sorted (entity type, name or None for the default)
Tags = tuple[str, str]  # (user, client-id) of the sensor metering a client; "" where it does not count


class QuotaRequestError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Resolved:
    tags: Tags
    bound: float


def _entity(pairs: dict[str, str | None]) -> Entity:
    return tuple(sorted(pairs.items()))


class ClientQuotaStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.quotas: dict[Entity, dict[str, float]] = {}
        self._keys: Counter[str] = Counter()  # how many entities set each key (enforcement is off where 0)
        self.version = 0  # bumped on every change (the managers drop their cached resolutions)

    @classmethod
    def load(cls, data_dir: Path) -> ClientQuotaStore:
        store = cls(data_dir / FILE_NAME)
        assert store.path is not None
        if not store.path.exists():
            return store
        try:
            document = json.loads(store.path.read_bytes())
            if document.get("version") != 1:
                raise ValueError(f"unknown version {document.get('version')!r}")
            for item in document["entities"]:
                entity = _entity({str(k): (None if v is None else str(v)) for k, v in item["entity"].items()})
                store._put(entity, {str(k): float(v) for k, v in item["quotas"].items()})
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ConfigError(f"cannot read {store.path}: {error}") from None
        return store

    def in_use(self, key: str) -> bool:
        return self._keys[key] > 0

    # ----- AlterClientQuotas

    def alter(self, entries: list[dict[str, Any]], validate_only: bool) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        changes: list[tuple[Entity, dict[str, float | None]]] = []
        seen: set[Entity] = set()
        for entry in entries:
            # as Kafka reads the request: a type named twice keeps its last name (and is answered so)
            merged = {p["entity_type"]: p["entity_name"] for p in entry["entity"]}
            pairs = [{"entity_type": kind, "entity_name": name} for kind, name in merged.items()]
            entity = _entity(merged)
            error: QuotaRequestError | None = None
            ops: dict[str, float | None] = {}
            for op in entry["ops"]:
                if op["key"] in ops:
                    error = QuotaRequestError(
                        ErrorCode.INVALID_REQUEST,
                        f"Duplicate quota key {op['key']} not updating quota for this entity {_describe(entity)}",
                    )
                    break
                ops[op["key"]] = None if op["remove"] else op["value"]
            if error is None and entity in seen:
                error = QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {_describe(entity)}")
            seen.add(entity)
            if error is None:
                error = _validate(pairs, ops)
            if error is None:
                changes.append((entity, ops))
            results.append(_alter_result(pairs, error))
        if changes and not validate_only:
            for entity, ops in changes:
                current = dict(self.quotas.get(entity, {}))
                for key, value in ops.items():
                    if value is None:
                        current.pop(key, None)
                    else:
                        current[key] = value
                self._put(entity, current)
            self._save()
            log.info("client_quotas_altered", entities=len(changes), quotas=sum(len(q) for q in self.quotas.values()))
        return results

    def _put(self, entity: Entity, quotas: dict[str, float]) -> None:
        for key in self.quotas.pop(entity, {}):
            self._keys[key] -= 1
        if quotas:
            self.quotas[entity] = quotas
            self._keys.update(quotas.keys())
        self.version += 1

    def _save(self) -> None:
        if self.path is None:
            return
        document = {
            "version": 1,
            "entities": [
                {"entity": dict(entity), "quotas": quotas}
                for entity, quotas in sorted(self.quotas.items(), key=lambda item: [(t, n or "") for t, n in item[0]])
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(document, indent=1).encode())

    # ----- DescribeClientQuotas

    def describe(self, components: list[dict[str, Any]], strict: bool) -> list[dict[str, Any]]:
        """The entries matching the filter; raises QuotaRequestError with Kafka's error for a bad filter."""
        exact: dict[str, str | None] = {}
        specified: set[str] = set()
        for component in components:
            kind, match = component["entity_type"], component["match"]
            if not kind:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
            if kind in exact or kind in specified:
                raise QuotaRequestError(
                    ErrorCode.INVALID_REQUEST, f"Entity type {kind} cannot appear more than once in the filter."
                )
            if kind not in (USER, CLIENT_ID, IP):
                raise QuotaRequestError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
            match_type = component["match_type"]
            if match_type == MATCH_EXACT:
                if match is None:
                    raise QuotaRequestError(
                        ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null."
                    )
                exact[kind] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise QuotaRequestError(
                        ErrorCode.INVALID_REQUEST,
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                    )
                exact[kind] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise QuotaRequestError(
                        ErrorCode.INVALID_REQUEST,
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                    )
                specified.add(kind)
            else:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
        kinds = set(exact) | specified
        if IP in kinds and (USER in kinds or CLIENT_ID in kinds):
            raise QuotaRequestError(
                ErrorCode.INVALID_REQUEST,
                "Invalid entity filter component combination. IP filter component should not be used with "
                "user or clientId filter component.",
            )
        entries = []
        for entity, quotas in self.quotas.items():
            names = dict(entity)
            if strict and len(names) != len(kinds):
                continue
            if any(kind not in names or names[kind] != name for kind, name in exact.items()):
                continue
            if any(kind not in names for kind in specified):
                continue
            entries.append(
                {
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                    "values": [{"key": k, "value": v} for k, v in sorted(quotas.items())],
                }
            )
        return entries

    # ----- enforcement

    def lookup(self, key: str, user: str, client_id: str) -> Resolved | None:
        """The quota `key` for this user and client id, with the sensor tags that meter it (Kafka's precedence)."""
        quotas = self.quotas
        if client_id:
            for entity, tags in (
                (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
                (((CLIENT_ID, None), (USER, user)), (user, client_id)),
                (((USER, user),), (user, "")),
                (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
                (((CLIENT_ID, None), (USER, None)), (user, client_id)),
                (((USER, None),), (user, "")),
                (((CLIENT_ID, client_id),), ("", client_id)),
                (((CLIENT_ID, None),), ("", client_id)),
            ):
                found = quotas.get(entity)
                if found is not None and key in found:
                    return Resolved(tags, found[key])
            return None
        for entity in (((USER, user),), ((USER, None),)):
            found = quotas.get(entity)
            if found is not None and key in found:
                return Resolved((user, ""), found[key])
        return None

    def ip_quota(self, ip: str) -> float | None:
        """connection_creation_rate for this address: its own, else the default ip's."""
        for name in (ip, None):
            found = self.quotas.get(((IP, name),))
            if found is not None and CONNECTION_CREATION_RATE in found:
                return found[CONNECTION_CREATION_RATE]
        return None


def _validate(pairs: list[dict[str, Any]], ops: dict[str, float | None]) -> QuotaRequestError | None:
    """Kafka's checks of one entity and its operations (ClientQuotaControlManager)."""
    if not pairs:
        return QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    names: dict[str, str | None] = {}
    for pair in pairs:  # (a type named twice was merged as Kafka reads the request: see alter)
        kind, name = pair["entity_type"], pair["entity_name"]
        if kind not in (USER, CLIENT_ID, IP):
            return QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {kind}")
        if name is not None and not name:
            return QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Empty {kind} not supported")
        names[kind] = name
    if IP in names:
        if USER in names or CLIENT_ID in names:
            return QuotaRequestError(
                ErrorCode.INVALID_REQUEST,
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
            )
        if not _valid_ip_entity(names[IP]):
            return QuotaRequestError(ErrorCode.INVALID_REQUEST, f"{names[IP]} is not a valid IP or resolvable host.")
        keys = _IP_KEYS
    else:
        keys = _USER_CLIENT_KEYS
    for key, value in ops.items():
        if value is None:
            continue
        if key in _SCRAM_KEYS and USER in names and IP not in names:
            return QuotaRequestError(
                ErrorCode.UNKNOWN_SERVER_ERROR, "Unexpected config type STRING should be Long or Double"
            )
        spec = keys.get(key)
        if spec is None:
            return QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
        if value <= 0.0:
            return QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0")
        integral, largest, type_name = spec
        if integral:
            if value > largest:
                return QuotaRequestError(
                    ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for {type_name}."
                )
            if abs(value % 1.0) > 1e-6:
                return QuotaRequestError(ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value.")
    return None


def _valid_ip_entity(name: str | None) -> bool:
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return False
    return True


def _alter_result(pairs: list[dict[str, Any]], error: QuotaRequestError | None) -> dict[str, Any]:
    return {
        "error_code": 0 if error is None else int(error.code),
        "error_message": None if error is None else str(error),
        "entity": [{"entity_type": p["entity_type"], "entity_name": p["entity_name"]} for p in pairs],
    }


def _describe(entity: Entity) -> str:
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"
