"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): stored credentials, the server's exchange, and the
client's (a broker authenticating to another over the inter-broker listener).

Credentials are managed as Kafka manages them, through AlterUserScramCredentials: the client sends a
salt, an iteration count and the salted password; the broker keeps only the salt, the iteration count
and the two keys derived from it (StoredKey = H(HMAC(salted, "Client Key")), ServerKey =
HMAC(salted, "Server Key")), never the password nor the salted password. They are stored in
`<data-dir>/scram-credentials.json`, written atomically, and survive restarts.

The hash and random modules load at the first credential derived or exchange run, not with the store
that every broker loads at start (start-up time).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from kbroker.log.checkpoint import write_atomically
from protocol.errors import ErrorCode

log = structlog.get_logger(__name__)

FILE_NAME = "scram-credentials.json"
# Mechanism numbers of the credential APIs, and their hash functions.
MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
NUMBERS = {name: number for number, name in MECHANISMS.items()}
HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384  # Kafka's bounds


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: str, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
        import hashlib
        import hmac

        digest = HASHES[mechanism]
        client_key = hmac.digest(salted, b"Client Key", digest)
        stored_key = hashlib.new(digest, client_key).digest()
        server_key = hmac.digest(salted, b"Server Key", digest)
        return cls(salt, stored_key, server_key, iterations)

    @classmethod
    def from_password(cls, mechanism: str, password: str, salt: bytes, iterations: int) -> ScramCredential:
        import hashlib

        salted = hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)
        return cls.from_salted_password(mechanism, salt, salted, iterations)

    def to_json(self) -> dict[str, Any]:
        encode = base64.b64encode
        return {
            "salt": encode(self.salt).decode(),
            "stored_key": encode(self.stored_key).decode(),
            "server_key": encode(self.server_key).decode(),
            "iterations": self.iterations,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScramCredential:
        decode = base64.b64decode
        return cls(decode(data["salt"]), decode(data["stored_key"]), decode(data["server_key"]), data["iterations"])


class ScramStore:
    """user -> mechanism -> credential, kept in one JSON file."""

    def __init__(self, path: Path, users: dict[str, dict[str, ScramCredential]] | None = None) -> None:
        self.path = path
        self.users = users or {}

    @classmethod
    def load(cls, data_dir: Path) -> ScramStore:
        path = data_dir / FILE_NAME
        if not path.exists():
            return cls(path)
        data = json.loads(path.read_text())
        users = {
            user: {mechanism: ScramCredential.from_json(c) for mechanism, c in mechanisms.items()}
            for user, mechanisms in data["users"].items()
        }
        return cls(path, users)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.users.get(user, {}).get(mechanism)

    def describe(self, names: list[str] | None) -> list[dict[str, Any]]:
        """DescribeUserScramCredentials results (Kafka's errors for duplicates and unknown users)."""
        if not names:
            names = sorted(self.users)
        results = []
        seen: set[str] = set()
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            if names.count(name) > 1:
                results.append(
                    _result(
                        name,
                        ErrorCode.DUPLICATE_RESOURCE,
                        "Cannot describe SCRAM credentials for the same user twice in a single request",
                    )
                )
                continue
            found = self.users.get(name)
            if not found:
                results.append(
                    _result(
                        name, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist"
                    )
                )
                continue
            infos = [{"mechanism": NUMBERS[m], "iterations": c.iterations} for m, c in sorted(found.items())]
            results.append(_result(name, ErrorCode.NONE, "") | {"credential_infos": infos})  # "": as Kafka
        return results

    def alter(self, deletions: list[dict[str, Any]], upsertions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """AlterUserScramCredentials: every change of a user is checked first; a user's changes apply
        together, and the file is written once, before the answer."""
        changes: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for kind, requested in (("delete", deletions), ("upsert", upsertions)):
            for entry in requested:
                changes.setdefault(entry["name"], []).append((kind, entry))
        results, changed = [], False
        for name, steps in changes.items():
            error = self._check(name, steps)
            if error is not None:
                results.append(_result(name, *error))
                continue
            for kind, item in steps:
                mechanism = MECHANISMS[item["mechanism"]]
                if kind == "delete":
                    del self.users[name][mechanism]
                    if not self.users[name]:
                        del self.users[name]
                else:
                    credential = ScramCredential.from_salted_password(
                        mechanism, bytes(item["salt"]), bytes(item["salted_password"]), item["iterations"]
                    )
                    self.users.setdefault(name, {})[mechanism] = credential
            changed = True
            results.append(_result(name, ErrorCode.NONE, None))
        if changed:
            self._save()
            log.info("scram_credentials_altered", users=sorted(changes), results=len(results))
        return results

    def _check(self, name: str, items: list[tuple[str, dict[str, Any]]]) -> tuple[ErrorCode, str] | None:
        if not name:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
        for kind, item in items:  # as Kafka: deleting what does not exist is found before a duplicate
            mechanism = MECHANISMS.get(item["mechanism"])
            if kind == "delete" and mechanism is not None and self.get(name, mechanism) is None:
                return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        mechanisms = [item["mechanism"] for _, item in items]
        if len(set(mechanisms)) != len(mechanisms):
            return ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"
        for kind, item in items:
            mechanism = MECHANISMS.get(item["mechanism"])
            if mechanism is None:
                return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
            if kind == "delete" and self.get(name, mechanism) is None:
                return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
            if kind == "upsert":
                if item["iterations"] < MIN_ITERATIONS:
                    return ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Too few iterations (at least {MIN_ITERATIONS})"
                if item["iterations"] > MAX_ITERATIONS:
                    return ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Too many iterations (at most {MAX_ITERATIONS})"
                if not item["salt"] or not item["salted_password"]:
                    return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
        return None

    def _save(self) -> None:
        data = {
            "version": 1,
            "users": {u: {m: c.to_json() for m, c in ms.items()} for u, ms in sorted(self.users.items())},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(data, indent=1).encode())


def _result(name: str, error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"user": name, "error_code": int(error), "error_message": message, "credential_infos": []}


class ScramFailure(Exception):
    """The exchange failed; the message is what the client is told."""


class ScramServer:
    """The server's side of one SCRAM exchange: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str, store: ScramStore) -> None:
        self.mechanism = mechanism
        self.store = store
        self.user: str | None = None
        self.done = False
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def step(self, message: bytes) -> bytes:
        """The answer to the client's next message; raises ScramFailure."""
        try:
            text = bytes(message).decode("utf-8")
        except UnicodeDecodeError:
            raise ScramFailure("Invalid SCRAM message") from None
        if self._credential is None:
            return self._client_first(text).encode()
        return self._client_final(text).encode()

    def _client_first(self, text: str) -> str:
        import secrets

        flag, _, rest = text.partition(",")
        authzid, _, bare = rest.partition(",")
        if flag not in ("n", "y") or (authzid and not authzid.startswith("a=")):
            raise ScramFailure("Invalid SCRAM client first message (channel binding is not supported)")
        attributes = _attributes(bare)
        user, client_nonce = attributes.get("n"), attributes.get("r")
        if user is None or not client_nonce:
            raise ScramFailure("Invalid SCRAM client first message")
        user = _saslname(user)
        if authzid and _saslname(authzid[2:]) != user:
            raise ScramFailure("Authentication failed: authorization id must equal the user name")
        credential = self.store.get(user, self.mechanism)
        if credential is None:
            raise ScramFailure(
                f"Authentication failed during authentication due to invalid credentials with SASL mechanism {self.mechanism}"
            )
        self.user, self._credential = user, credential
        self._gs2_header = f"{flag},{authzid},"
        self._client_first_bare = bare
        self._nonce = client_nonce + secrets.token_urlsafe(18)
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first

    def _client_final(self, text: str) -> str:
        import hashlib
        import hmac

        credential = self._credential
        assert credential is not None
        without_proof, _, proof_part = text.rpartition(",p=")
        attributes = _attributes(without_proof)
        if not proof_part:
            raise ScramFailure("Invalid SCRAM client final message")
        # exactly the nonce the server sent (RFC 5802), as Kafka 4.3's ScramSaslServer checks it: older Kafka
        # took any nonce ending with it, and librdkafka 2.0 (Debian's kcat) relies on that, sending its own
        # nonce again in front; Kafka 4.3 refuses it, and so does kbroker
        if attributes.get("r") != self._nonce:  # Kafka answers its generic message for it, and so does kbroker
            raise ScramFailure(
                f"Authentication failed during authentication due to invalid credentials with SASL mechanism {self.mechanism}"
            )
        if attributes.get("c") != base64.b64encode(self._gs2_header.encode()).decode():
            raise ScramFailure("Invalid SCRAM client final message: channel binding does not match")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise ScramFailure("Invalid SCRAM client proof") from None
        digest = HASHES[self.mechanism]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = hmac.digest(credential.stored_key, auth_message, digest)
        if len(proof) != len(signature):
            raise ScramFailure("Invalid SCRAM client proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(digest, client_key).digest(), credential.stored_key):
            raise ScramFailure(
                f"Authentication failed during authentication due to invalid credentials with SASL mechanism {self.mechanism}"
            )
        self.done = True
        server_signature = hmac.digest(credential.server_key, auth_message, digest)
        return "v=" + base64.b64encode(server_signature).decode()


class ScramClient:
    """The client's side of one exchange: `first()`, then `final(server_first)`, then `verify(server_final)`
    (which checks that the server knew the credential too). Raises ScramFailure."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None) -> None:
        import secrets  # (the hash and random modules load when first needed: start-up time)

        self.mechanism = mechanism
        self.password = password
        self._nonce = nonce or secrets.token_urlsafe(18)
        name = user.replace("=", "=3D").replace(",", "=2C")
        self._client_first_bare = f"n={name},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return ("n,," + self._client_first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        text = bytes(server_first).decode("utf-8", "replace")
        attributes = _attributes(text)
        nonce, salt, iterations = attributes.get("r", ""), attributes.get("s"), attributes.get("i", "")
        if not nonce.startswith(self._nonce) or nonce == self._nonce or salt is None or not iterations.isdigit():
            raise ScramFailure(f"Invalid SCRAM server first message {text!r}")
        if int(iterations) < MIN_ITERATIONS:
            raise ScramFailure(f"SCRAM iterations {iterations} below {MIN_ITERATIONS}")
        import hashlib
        import hmac

        digest = HASHES[self.mechanism]
        salt_bytes = base64.b64decode(salt)
        salted = hashlib.pbkdf2_hmac(digest, self.password.encode(), salt_bytes, int(iterations))
        credential = ScramCredential.from_salted_password(self.mechanism, salt_bytes, salted, int(iterations))
        stored_key, server_key = credential.stored_key, credential.server_key  # the keys the server holds
        client_key = hmac.digest(salted, b"Client Key", digest)
        without_proof = "c=" + base64.b64encode(b"n,,").decode() + f",r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        signature = hmac.digest(stored_key, auth_message, digest)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = hmac.digest(server_key, auth_message, digest)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        import hmac

        text = bytes(server_final).decode("utf-8", "replace")
        expected = "v=" + base64.b64encode(self._server_signature).decode()
        if not self._server_signature or not hmac.compare_digest(text.encode(), expected.encode()):
            raise ScramFailure("Invalid SCRAM server signature")


def _attributes(text: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            result.setdefault(key, value)
    return result


def _saslname(text: str) -> str:
    return text.replace("=2C", ",").replace("=3D", "=")
