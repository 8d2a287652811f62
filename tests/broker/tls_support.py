"""Test certificates made at test time with the openssl command: a CA, a server certificate for
127.0.0.1/localhost, a client certificate, and a client certificate from a CA nobody trusts."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certificates:
    ca: Path
    server: Path  # key + chain, PEM (a Kafka PEM keystore file)
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    rogue_cert: Path  # signed by another CA
    rogue_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(name: str, directory: Path) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
             "-keyout", f"{name}.key", "-out", f"{name}.crt", cwd=directory)  # fmt: skip


def _signed(name: str, subject: str, ca: str, directory: Path, extensions: str | None = None) -> None:
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", f"{name}.key",
             "-out", f"{name}.csr", cwd=directory)  # fmt: skip
    args = ["x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-days", "2", "-out", f"{name}.crt"]  # fmt: skip
    if extensions:
        (directory / f"{name}.ext").write_text(extensions)
        args += ["-extfile", f"{name}.ext"]
    _openssl(*args, cwd=directory)


def make_certificates(directory: Path) -> Certificates:
    assert shutil.which("openssl"), "the TLS tests make their certificates with the openssl command"
    directory.mkdir(parents=True, exist_ok=True)
    _ca("ca", directory)
    _ca("rogue-ca", directory)
    _signed("server", "/CN=localhost", "ca", directory, "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _signed("client", "/C=NL/O=kbroker tests/OU=eng/CN=alice", "ca", directory)
    _signed("rogue", "/CN=mallory", "rogue-ca", directory)
    keystore = directory / "server-keystore.pem"
    keystore.write_text((directory / "server.key").read_text() + (directory / "server.crt").read_text())
    return Certificates(
        ca=directory / "ca.crt",
        server=keystore,
        server_cert=directory / "server.crt",
        server_key=directory / "server.key",
        client_cert=directory / "client.crt",
        client_key=directory / "client.key",
        rogue_cert=directory / "rogue.crt",
        rogue_key=directory / "rogue.key",
    )
