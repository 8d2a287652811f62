"""TlsSession without sockets: a handshake and records through memory, the principal, a refused certificate."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from kbroker.tls import ANONYMOUS, TlsSession, principal_of
from tests.broker.tls_support import Certificates, make_certificates


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


def server_context(certs: Certificates, client_auth: ssl.VerifyMode) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(certs.server))
    context.load_verify_locations(cafile=str(certs.ca))
    context.verify_mode = client_auth
    return context


def client(
    certs: Certificates, cert: Path | None, key: Path | None
) -> tuple[ssl.SSLObject, ssl.MemoryBIO, ssl.MemoryBIO]:
    context = ssl.create_default_context(cafile=str(certs.ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    return context.wrap_bio(incoming, outgoing, server_hostname="localhost"), incoming, outgoing


def shake(session: TlsSession, peer: ssl.SSLObject, peer_in: ssl.MemoryBIO, peer_out: ssl.MemoryBIO) -> None:
    for _ in range(10):
        try:
            peer.do_handshake()
        except ssl.SSLWantReadError:
            pass
        session.receive(peer_out.read())
        peer_in.write(session.outgoing())
        if session.established:
            try:
                peer.do_handshake()
            except ssl.SSLWantReadError:
                pass
            return


def test_handshake_records_and_principal_in_memory(certs: Certificates) -> None:
    session = TlsSession(server_context(certs, ssl.CERT_REQUIRED))
    peer, peer_in, peer_out = client(certs, certs.client_cert, certs.client_key)
    shake(session, peer, peer_in, peer_out)
    assert session.established and session.principal == "User:CN=alice,OU=eng,O=kbroker tests,C=NL"
    peer.write(b"request bytes")
    session.receive(peer_out.read())
    buffer = bytearray(100)
    n = session.read_into(memoryview(buffer))
    assert bytes(buffer[:n]) == b"request bytes"
    assert session.read_into(memoryview(buffer)) == 0
    peer_in.write(session.encrypt([b"response ", memoryview(b"chunks")]))
    assert peer.read(100) == b"response chunks"


def test_refused_certificate_leaves_the_alert_to_send(certs: Certificates) -> None:
    session = TlsSession(server_context(certs, ssl.CERT_REQUIRED))
    peer, peer_in, peer_out = client(certs, certs.rogue_cert, certs.rogue_key)
    with pytest.raises(ssl.SSLError, match="CERTIFICATE_VERIFY_FAILED"):
        shake(session, peer, peer_in, peer_out)
    peer_in.write(session.outgoing())
    with pytest.raises(ssl.SSLError, match="UNKNOWN_CA"):
        peer.read(10)


def test_principal_of_follows_rfc2253() -> None:
    subject = ((("countryName", "NL"),), (("organizationName", "Acme, Inc"),), (("commonName", "bob+1"),))
    assert principal_of({"subject": subject}) == "User:CN=bob\\+1,O=Acme\\, Inc,C=NL"
    assert principal_of(None) == ANONYMOUS
    assert principal_of({}) == ANONYMOUS


def test_a_client_close_notify_is_noticed_and_answered(certs: Certificates) -> None:
    """asyncio clients (aiokafka) wait for the server's close_notify after sending theirs."""
    session = TlsSession(server_context(certs, ssl.CERT_NONE))
    peer, peer_in, peer_out = client(certs, None, None)
    shake(session, peer, peer_in, peer_out)
    with pytest.raises(ssl.SSLWantReadError):
        peer.unwrap()  # sends close_notify, then waits for ours
    session.receive(peer_out.read())
    assert session.read_into(memoryview(bytearray(100))) == 0 and session.closed_by_peer
    peer_in.write(session.close_notify())
    peer.unwrap()  # completes: the server's close_notify arrived
