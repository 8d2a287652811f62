"""README's "A secured set-up" run as written, against kbroker started with docker-compose.secured.yml's
environment.

There is no container engine where these tests run: the compose file's `environment:` is given to a
kbroker process directly, with its ports, host names and the container's /etc/kbroker/tls swapped for
free local ports, 127.0.0.1 and the test's own tls directory. The README's blocks are then run in order:
the openssl commands (bash, in the test's directory), admin.properties, Kafka 4.3.1's kafka-topics,
kafka-configs and kafka-acls (one JVM, tests/tools/ToolRunner.java), app.properties, and Kafka's console
producer and consumer over the external (SASL_SSL) and internal (SASL_PLAINTEXT) listeners; then what the
README says is refused is.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer

from kbroker.cli.serve import environment_properties
from tests.process import REPO, BrokerProcess, free_port

if not shutil.which("java") or not shutil.which("kcat") or not shutil.which("openssl"):
    pytest.skip("the README's steps need java (Kafka's tools), kcat and openssl", allow_module_level=True)

from tests.tools.test_kafka_tools import JVM, ToolJvm, classpath  # noqa: E402,F401 - classpath is a fixture

COMPOSE = REPO / "docker-compose.secured.yml"
TOOLS = {
    "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs.sh": "kafka.admin.ConfigCommand",
    "kafka-acls.sh": "org.apache.kafka.tools.AclCommand",
}


def compose_environment() -> dict[str, str]:
    """The kbroker service's `environment:` (one `NAME: "value"` or `NAME: 'value'` per line)."""
    lines = COMPOSE.read_text().splitlines()
    environment: dict[str, str] = {}
    for line in lines[lines.index("    environment:") + 1 :]:
        if line.strip().startswith("#"):
            continue
        match = re.fullmatch(r" {6}([A-Z0-9_]+): (?:\"(.*)\"|'(.*)')", line)
        if match is None:
            break
        environment[match.group(1)] = match.group(2) if match.group(2) is not None else match.group(3)
    return environment


def readme_blocks() -> list[tuple[str, str]]:
    """(language, text) of each fenced block of the README's secured set-up section."""
    readme = (REPO / "README.md").read_text()
    start = readme.index("### A secured set-up: TLS, SCRAM and ACLs")
    section = readme[start : readme.index("\n## ", start)]
    return re.findall(r"```(\w+)\n(.*?)```", section, re.DOTALL)


def commands(block: str) -> list[str]:
    """A bash block's commands, continuation lines joined."""
    return [c.strip() for c in block.replace("\\\n", " ").splitlines() if c.strip()]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """The README's directory with tls/ made by its openssl commands, and kbroker running with the compose
    file's environment; yields the directory and the address swaps (compose or README -> local)."""
    workdir = tmp_path_factory.mktemp("secured-compose")
    first = readme_blocks()[0]
    assert first[0] == "bash"
    for command in commands(first[1]):
        if command.startswith("docker "):
            continue
        subprocess.run(["bash", "-c", command], cwd=workdir, check=True, capture_output=True, timeout=60)
    internal, external = free_port(), free_port()
    swaps = {
        "0.0.0.0:19092": f"127.0.0.1:{internal}",
        "kbroker:19092": f"127.0.0.1:{internal}",
        "0.0.0.0:9094": f"127.0.0.1:{external}",
        "localhost:9094": f"127.0.0.1:{external}",
        "/etc/kbroker/tls/": f"{workdir}/tls/",
    }
    environment = compose_environment()
    assert {"KAFKA_LISTENERS", "KAFKA_AUTHORIZER_CLASS_NAME", "KAFKA_SSL_KEYSTORE_LOCATION"} <= set(environment)
    known, unknown = environment_properties(environment)
    assert unknown == {} and len(known) == len([n for n in environment if n.startswith("KAFKA_")])
    with pytest.MonkeyPatch.context() as patch:
        for name, value in environment.items():
            for old, new in swaps.items():
                value = value.replace(old, new)
            patch.setenv(name, value)
        broker = BrokerProcess(workdir / "data", port=external, listen_flag=False).start()
    try:
        yield workdir, swaps
    finally:
        broker.stop()


def swapped(text: str, swaps: dict[str, str]) -> str:
    for old, new in swaps.items():
        text = text.replace(old, new)
    return text


def test_readme_secured_setup_as_written(setup: tuple[Path, dict[str, str]], classpath: str) -> None:  # noqa: F811
    workdir, swaps = setup
    blocks = readme_blocks()
    assert [language for language, _ in blocks] == ["bash", "properties", "bash", "properties", "bash"]
    # admin.properties and app.properties, their tls/ paths made absolute (the tools' JVMs run elsewhere);
    # app-internal.properties as the README derives it: SASL_PLAINTEXT and no ssl. lines
    admin = workdir / "admin.properties"
    admin.write_text(blocks[1][1].replace("tls/", f"{workdir}/tls/"))
    app = workdir / "app.properties"
    app.write_text(blocks[3][1].replace("tls/", f"{workdir}/tls/"))
    internal_lines = ["security.protocol=SASL_PLAINTEXT"] + [
        line for line in blocks[3][1].splitlines()[1:] if not line.startswith("ssl.")
    ]
    (workdir / "app-internal.properties").write_text("\n".join(internal_lines) + "\n")
    jvm = ToolJvm(classpath)
    try:
        for command in commands(blocks[2][1]):
            tool, *args = shlex.split(swapped(command, swaps))
            args = [str(admin) if a == "admin.properties" else a for a in args]
            status, out, err = jvm.run(TOOLS[tool], *args)
            assert status == 0, f"{command}\n{out}{err}"
        # app is no super user: it may not even list the ACLs
        status, out, err = jvm.run(TOOLS["kafka-acls.sh"], "--bootstrap-server", swaps["localhost:9094"],
                                   "--command-config", str(app), "--list")  # fmt: skip
        assert "ClusterAuthorizationException" in out + err, out + err
    finally:
        jvm.close()

    def console(command: str) -> subprocess.CompletedProcess[str]:
        """A console-tool line of the README, `echo ... |` feeding its stdin, run on Kafka 4.3.1's jars."""
        line = swapped(command, swaps)
        stdin = ""
        if line.startswith("echo "):
            echoed, line = line.split("|", 1)
            stdin = shlex.split(echoed)[1] + "\n"
        tool, *args = shlex.split(line)
        main = {"kafka-console-producer.sh": "org.apache.kafka.tools.ConsoleProducer",
                "kafka-console-consumer.sh": "org.apache.kafka.tools.consumer.ConsoleConsumer"}[tool]  # fmt: skip
        return subprocess.run([*JVM, "-cp", classpath, main, *args], input=stdin, cwd=workdir, capture_output=True,
                              text=True, timeout=90)  # fmt: skip

    produce, consume_external, consume_internal = commands(blocks[4][1])
    for command in (produce, consume_external, consume_internal):
        result = console(command)
        assert result.returncode == 0, f"{command}\n{result.stderr}"
        if command is not produce:
            assert result.stdout.splitlines() == ["order 1"], result.stderr
    # what the README says is refused: another topic, a wrong password, a client without credentials
    # (the console producer reports a refused send only through log4j, silent here: librdkafka says it)
    settings = dict(line.split("=", 1) for line in app.read_text().splitlines() if line)
    errors: list[KafkaError] = []
    config = {
        "bootstrap.servers": swaps["localhost:9094"], "security.protocol": settings["security.protocol"],
        "ssl.ca.location": settings["ssl.truststore.location"], "sasl.mechanisms": settings["sasl.mechanism"],
        "sasl.username": "app", "sasl.password": "app-secret", "message.timeout.ms": 10000,
    }  # fmt: skip
    producer = Producer(config)
    producer.produce("payroll", b"x", on_delivery=lambda error, _: errors.append(error))
    producer.flush(20)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED], errors
    refusals: list[KafkaError] = []
    wrong = Producer({**config, "sasl.password": "nope", "error_cb": refusals.append})
    wrong.produce("orders", b"x")
    wrong.flush(10)
    assert KafkaError._AUTHENTICATION in [e.code() for e in refusals], refusals
    anonymous = subprocess.run(["kcat", "-b", swaps["kbroker:19092"], "-L", "-m", "5"], capture_output=True, timeout=60)
    assert anonymous.returncode != 0, anonymous.stdout
