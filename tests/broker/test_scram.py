"""SCRAM without sockets: RFC 7677's exchange, credential checks and storage."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from pathlib import Path

import pytest

from kbroker import scram
from kbroker.sasl import SaslSession, SaslSettings
from kbroker.scram import ScramCredential, ScramFailure, ScramServer, ScramStore
from protocol.errors import ErrorCode

RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")


def store_with(tmp_path: Path, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> ScramStore:
    store = ScramStore(tmp_path / scram.FILE_NAME)
    store.users[user] = {mechanism: ScramCredential.from_password(mechanism, password, RFC_SALT, 4096)}
    return store


def test_rfc7677_exchange(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RFC 7677 section 3: user "user", password "pencil"; the server's nonce part fixed to the RFC's."""
    monkeypatch.setattr(secrets, "token_urlsafe", lambda n: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    server = ScramServer("SCRAM-SHA-256", store_with(tmp_path, "user", "pencil"))
    first = server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.step(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.done and server.user == "user"


def client_final(
    server_first: bytes, client_first_bare: str, password: str, digest: str = "sha256", nonce_prefix: str = ""
) -> bytes:
    attributes = dict(part.split("=", 1) for part in server_first.decode().split(","))
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(attributes["s"]), int(attributes["i"]))
    client_key = hmac.digest(salted, b"Client Key", digest)
    without_proof = f"c=biws,r={nonce_prefix}{attributes['r']}"
    auth = f"{client_first_bare},{server_first.decode()},{without_proof}".encode()
    signature = hmac.digest(hashlib.new(digest, client_key).digest(), auth, digest)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_session_with_scram(tmp_path: Path, mechanism: str) -> None:
    digest = scram.HASHES[mechanism]
    store = store_with(tmp_path, "alice", "alice-secret", mechanism)
    for password, ok in (("alice-secret", True), ("wrong", False)):
        session = SaslSession(SaslSettings((mechanism,), scram=store))
        assert session.handshake(mechanism).error is ErrorCode.NONE
        first = session.authenticate(b"n,,n=alice,r=abc")
        assert first.error is ErrorCode.NONE and not session.authenticated
        final = session.authenticate(client_final(first.auth_bytes, "n=alice,r=abc", password, digest))
        if ok:
            assert final.error is ErrorCode.NONE and session.principal == "User:alice"
            assert final.auth_bytes.startswith(b"v=")
        else:
            assert final.error is ErrorCode.SASL_AUTHENTICATION_FAILED and session.failed


@pytest.mark.parametrize(
    "message",
    [b"n,,n=bob,r=abc", b"p=tls-unique,,n=alice,r=abc", b"n,,r=abc", b"\xff"],
    ids=["unknown-user", "channel-binding", "no-user", "not-utf8"],
)
def test_bad_client_first(tmp_path: Path, message: bytes) -> None:
    server = ScramServer("SCRAM-SHA-256", store_with(tmp_path, "alice", "x"))
    with pytest.raises(ScramFailure):
        server.step(message)


def test_replayed_nonce_is_refused(tmp_path: Path) -> None:
    server = ScramServer("SCRAM-SHA-256", store_with(tmp_path, "alice", "alice-secret"))
    first = server.step(b"n,,n=alice,r=abc")
    forged = client_final(first.replace(b"r=abc", b"r=abcX", 1), "n=alice,r=abc", "alice-secret")
    with pytest.raises(ScramFailure, match="invalid credentials with SASL mechanism SCRAM-SHA-256"):
        server.step(forged)


def test_a_nonce_repeating_the_clients_part_in_front_is_refused_as_kafka_refuses_it(tmp_path: Path) -> None:
    """librdkafka 2.0 (Debian's kcat) sends r=<client nonce><client nonce><server nonce>. Kafka 4.3's
    ScramSaslServer wants exactly the nonce it sent (RFC 5802) and refuses it, with a valid proof even:
    scripts/compat_vs_kafka --security shows kcat's SCRAM refused by Apache Kafka 4.3.1."""
    server = ScramServer("SCRAM-SHA-256", store_with(tmp_path, "alice", "alice-secret"))
    first = server.step(b"n,,n=alice,r=abc")
    with pytest.raises(ScramFailure, match="invalid credentials with SASL mechanism SCRAM-SHA-256"):
        server.step(client_final(first, "n=alice,r=abc", "alice-secret", nonce_prefix="abc"))
    assert not server.done


def upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> dict[str, object]:
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": b"salt",
        "salted_password": b"s" * 32,
    }


def test_store_alter_describe_and_reload(tmp_path: Path) -> None:
    store = ScramStore.load(tmp_path)
    results = store.alter([], [upsert("alice"), upsert("alice", 2, 8192), upsert("bob", 1, 100), upsert("", 1)])
    assert [(r["user"], r["error_code"]) for r in results] == [
        ("alice", 0),
        ("bob", ErrorCode.UNACCEPTABLE_CREDENTIAL),
        ("", ErrorCode.UNACCEPTABLE_CREDENTIAL),
    ]
    text = (tmp_path / scram.FILE_NAME).read_text()
    assert "salted" not in text and base64.b64encode(b"s" * 32).decode() not in text  # only derived keys
    again = ScramStore.load(tmp_path)
    (alice,) = again.describe(["alice"])
    assert alice["credential_infos"] == [{"mechanism": 1, "iterations": 4096}, {"mechanism": 2, "iterations": 8192}]
    assert again.describe(["nobody"])[0]["error_code"] == ErrorCode.RESOURCE_NOT_FOUND
    assert again.describe(["alice", "alice"])[0]["error_code"] == ErrorCode.DUPLICATE_RESOURCE
    deleted = again.alter([{"name": "alice", "mechanism": 1}, {"name": "carol", "mechanism": 1}], [])
    assert [(r["user"], r["error_code"]) for r in deleted] == [("alice", 0), ("carol", ErrorCode.RESOURCE_NOT_FOUND)]
    twice = again.alter([{"name": "alice", "mechanism": 2}], [upsert("alice", 2)])
    assert twice[0]["error_code"] == ErrorCode.DUPLICATE_RESOURCE
    assert [r["user"] for r in ScramStore.load(tmp_path).describe(None)] == ["alice"]


def test_client_follows_rfc7677() -> None:
    """The client's side of RFC 7677 section 3: its messages and the server signature it accepts."""
    client = scram.ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert client.final(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    client.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(ScramFailure):
        client.verify(b"v=AAAA")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_client_and_server_agree(tmp_path: Path, mechanism: str) -> None:
    store = store_with(tmp_path, "a,b=c", "secret", mechanism)
    server = ScramServer(mechanism, store)
    client = scram.ScramClient(mechanism, "a,b=c", "secret")
    client.verify(server.step(client.final(server.step(client.first()))))
    assert server.done and server.user == "a,b=c"
    wrong = scram.ScramClient(mechanism, "a,b=c", "other")
    server = ScramServer(mechanism, store)
    with pytest.raises(ScramFailure):
        server.step(wrong.final(server.step(wrong.first())))


@pytest.mark.parametrize(
    "server_first",
    [b"r=abc,s=AAAA,i=4096", b"r=abcdef,s=AAAA,i=100", b"r=xyzdef,s=AAAA,i=4096", b"r=abcdef,i=4096"],
    ids=["nonce-not-extended", "too-few-iterations", "foreign-nonce", "no-salt"],
)
def test_client_refuses_a_bad_server_first(server_first: bytes) -> None:
    with pytest.raises(ScramFailure):
        scram.ScramClient("SCRAM-SHA-256", "u", "p", nonce="abc").final(server_first)
