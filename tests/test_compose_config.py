"""The compose files as Docker Compose reads them.

There is no container engine where these tests run, so the tests that run kbroker with a compose file's
environment (tests/test_compose.py, tests/compat/scenarios/test_security_compose.py) read the `environment:` block
themselves. Here `docker-compose config` (Compose's own parser and schema check, which needs no engine)
resolves each file, and what it resolves must be what those tests ran: the same variables with the same
values, the ports the advertised listeners promise published, the TLS directory mounted where the
keystore settings look for it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import test_compose
from tests.compat.scenarios import test_security_compose

REPO = Path(__file__).resolve().parents[1]

if not shutil.which("docker-compose"):
    pytest.skip("docker-compose is installed by scripts/install_clients", allow_module_level=True)


def resolved(name: str) -> dict[str, Any]:
    result = subprocess.run(
        ["docker-compose", "-f", str(REPO / name), "config"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    document = yaml.safe_load(result.stdout)
    assert isinstance(document, dict)
    return document


def published_ports(service: dict[str, Any]) -> set[int]:
    return {int(port["published"]) for port in service.get("ports", [])}


def mounts(service: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """target -> (source, mode) of each volume (Compose 1.x prints them as `source:target:mode`)."""
    found = {}
    for volume in service.get("volumes", []):
        source, target, mode = volume.split(":")
        found[target] = (source, mode)
    return found


def advertised_ports(environment: dict[str, str], host: str) -> set[int]:
    """Ports of the advertised listeners on `host` (those a program outside the network connects to)."""
    ports = set()
    for listener in environment["KAFKA_ADVERTISED_LISTENERS"].split(","):
        address = listener.split("://", 1)[1]
        listener_host, port = address.rsplit(":", 1)
        if listener_host == host:
            ports.add(int(port))
    return ports


def test_the_getting_started_file_is_what_its_test_runs() -> None:
    service = resolved("docker-compose.yml")["services"]["kbroker"]
    environment = {name: str(value) for name, value in service["environment"].items()}
    assert environment == test_compose.compose_environment()
    assert advertised_ports(environment, "localhost") <= published_ports(service)
    assert int(environment["KBROKER_HTTP_LISTEN"].rsplit(":", 1)[1]) in published_ports(service)
    assert mounts(service)["/var/lib/kbroker"] == ("kbroker-data", "rw")


def test_the_secured_file_is_what_its_test_runs() -> None:
    service = resolved("docker-compose.secured.yml")["services"]["kbroker"]
    environment = {name: str(value) for name, value in service["environment"].items()}
    assert environment == test_security_compose.compose_environment()
    assert advertised_ports(environment, "localhost") <= published_ports(service)
    assert mounts(service)["/etc/kbroker/tls"] == (str(REPO / "tls"), "ro")
    for name in ("KAFKA_SSL_KEYSTORE_LOCATION", "KAFKA_SSL_TRUSTSTORE_LOCATION"):
        assert environment[name].startswith("/etc/kbroker/tls/")


def test_a_broken_file_is_refused(tmp_path: Path) -> None:
    """docker-compose config checks the schema: the checks above can fail."""
    broken = tmp_path / "docker-compose.yml"
    broken.write_text("services:\n  kbroker:\n    ports: 9092\n")
    result = subprocess.run(["docker-compose", "-f", str(broken), "config"], capture_output=True, text=True)
    assert result.returncode != 0
