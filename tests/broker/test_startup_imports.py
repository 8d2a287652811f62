"""Start-up loads only what serving the Kafka protocol needs (start-up time: the first ApiVersions answer)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from protocol.api_keys import ApiKey
from tests.broker.conftest import create_topic
from tests.process import REPO, BrokerProcess, RawClient

# Each loads only when configured or first used: the HTTP listener (aiohttp, the metrics), the client code
# of the other commands, the test controls, SASL, a cleaning round, and the crc32c package (which reads its
# own version through importlib.metadata).
NOT_AT_START_UP = (
    "aiohttp",
    "prometheus_client",
    "kbroker.http.app",
    "kbroker.client",
    "kbroker.cli.consume",
    "kbroker.cli.produce",
    "kbroker.cli.topic",
    "kbroker.cli.group",
    "kbroker.cli.share_group",
    "kbroker.cli.cluster",
    "kbroker.cli.queue",
    "kbroker.testing",
    "kbroker.sasl",
    "kbroker.cleaner.segments",
    "kbroker.cleaner.log_cleaner",  # the cleaner itself: once the broker holds a partition
    "kbroker.log.partition_log",  # the partition classes: at the first partition loaded or created
    "kbroker.log.unified_log",
    "kbroker.log.segment",
    "kbroker.log.index",
    "kbroker.log.producer_state",
    "kbroker.log.validator",
    "protocol.records",
    "protocol.compression",
    "cramjam",
    "kbroker.auth.authorizer",  # the ACL authorizer and its store: when configured
    "kbroker.auth.store",
    "kbroker.quota.manager",  # client quotas: with none stored, at the first Describe/AlterClientQuotas
    "kbroker.quota.store",
    "crc32c",
    "importlib.metadata",
    "difflib",  # "did you mean" for a mistyped property
    "decimal",  # Java's rendering of very large or small doubles
    "tempfile",  # an inline PEM keystore
    "kbroker.group",  # the coordinators of a data directory without their internal topics: at first use
    "kbroker.share",
    "kbroker.txn.runtime",
    "kazoo",  # the cluster's modules (the cluster-only handlers import them): only with zookeeper.connect
    "kbroker.cluster",
)


# A `kbroker serve` in a fresh interpreter, stopped once started; prints the modules loaded by then. (Not
# `-X importtime`: it does not list modules loaded through importlib.import_module, as the handlers are.)
_SERVE = """
import asyncio, sys
from kbroker.cli import build_parser, load_config
from kbroker.server import serve

async def main():
    config = load_config(build_parser(sys.argv[1]).parse_args(sys.argv[1:]))
    started, stop = asyncio.Event(), asyncio.Event()
    server = asyncio.create_task(serve(config, started, stop=stop))
    await started.wait()
    print("\\n".join(sorted(sys.modules)))
    stop.set()
    await server

asyncio.run(main())
"""


def imported_until_started(tmp_path: Path, *extra: str) -> set[str]:
    """Module names a `kbroker serve` process has loaded once it serves."""
    command = [sys.executable, "-c", _SERVE, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data")]
    result = subprocess.run([*command, *extra], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return set(result.stdout.split())


def loaded(modules: set[str], package: str) -> list[str]:
    return sorted(m for m in modules if m == package or m.startswith(package + "."))


def test_default_serve_imports_nothing_it_does_not_need(tmp_path: Path) -> None:
    modules = imported_until_started(tmp_path)
    assert "kbroker.handlers.registry" in modules and "protocol.codec" in modules  # the listing is the real one
    assert {package: loaded(modules, package) for package in NOT_AT_START_UP} == {p: [] for p in NOT_AT_START_UP}
    # handler modules and message schemas load at their API's first request
    assert loaded(modules, "kbroker.handlers") == ["kbroker.handlers", "kbroker.handlers.registry"]
    assert loaded(modules, "protocol.schema") == ["protocol.schema", "protocol.schema.types"]


def test_a_coordinator_with_state_to_replay_starts_with_the_broker(tmp_path: Path) -> None:
    """The group and transaction coordinators start at their first use on a fresh data directory, and with
    the broker once __consumer_offsets / __transaction_state exist (their state is replayed, and prepared
    transactions completed, before the listener opens, as before)."""
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        with RawClient(broker.bootstrap) as client:
            create_topic(client, "t")
            partition = {"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}
            body = {
                "group_id": "g",
                "generation_id_or_member_epoch": -1,  # a commit outside any generation (a consumer's assign())
                "member_id": "",
                "group_instance_id": None,
                "topics": [{"name": "t", "partitions": [partition]}],
            }
            assert client.call(ApiKey.OFFSET_COMMIT, 9, body)["topics"][0]["partitions"][0]["error_code"] == 0
            init = {"transactional_id": "tx", "transaction_timeout_ms": 60_000, "producer_id": -1, "producer_epoch": -1}
            assert client.call(ApiKey.INIT_PRODUCER_ID, 4, init)["error_code"] == 0
    finally:
        assert broker.stop() == 0
    assert "group_coordinator_loaded" in broker.log_text()  # started by the commit
    modules = imported_until_started(tmp_path)
    assert "kbroker.group.runtime" in modules and "kbroker.txn.runtime" in modules
    assert not loaded(modules, "kbroker.share")  # no share group yet


def test_a_data_directory_with_a_partition_loads_the_log_and_the_cleaner_at_start(tmp_path: Path) -> None:
    """The other side of the partition classes' and the cleaner's absence above: a partition on disk loads them
    with the broker, before it answers (the cleaner reads its checkpoint at start, as before)."""
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        with RawClient(broker.bootstrap) as client:
            create_topic(client, "t")
    finally:
        assert broker.stop() == 0
    modules = imported_until_started(tmp_path)
    assert {"kbroker.log.partition_log", "kbroker.log.unified_log", "kbroker.cleaner.log_cleaner"} <= modules


def test_stored_client_quotas_load_with_the_broker(tmp_path: Path) -> None:
    """With quotas in the data directory they are enforced from the first request: loaded before the broker
    answers. Without, the first DescribeClientQuotas loads an empty store (and answers as before)."""
    broker = BrokerProcess(tmp_path / "data").start()
    entry = {
        "entity": [{"entity_type": "client-id", "entity_name": "slow"}],
        "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}],
    }
    describe = {"components": [{"entity_type": "client-id", "match_type": 0, "match": "slow"}], "strict": True}
    try:
        with RawClient(broker.bootstrap) as client:
            assert client.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, describe)["entries"] == []
            answer = client.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [entry], "validate_only": False})
            assert answer["entries"][0]["error_code"] == 0
    finally:
        assert broker.stop() == 0
    assert {"kbroker.quota.manager", "kbroker.quota.store"} <= imported_until_started(tmp_path)


def test_an_http_listener_loads_aiohttp(tmp_path: Path) -> None:
    """The other side of the check above: configured, the HTTP listener does load aiohttp."""
    modules = imported_until_started(tmp_path, "--http-listen", "127.0.0.1:0")
    assert loaded(modules, "aiohttp")


def test_the_serve_command_line_loads_no_client_command() -> None:
    script = (
        "import contextlib, sys\nfrom kbroker.cli import main\n"
        "with contextlib.suppress(SystemExit):\n    main(['serve', '--help'])\n"
        "print('LOADED', *sorted(m for m in sys.modules if m.startswith(('kbroker.cli.', 'kbroker.client'))))"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert "--data-dir" in result.stdout  # the help of `serve` was printed
    assert result.stdout.split("LOADED")[1].split() == ["kbroker.cli.serve"]


def test_the_declared_versions_are_those_of_the_handler_modules() -> None:
    """ApiVersions answers from DECLARED before any handler module loads: it must list exactly the modules'
    own ranges (@handles refuses a range that differs; this also catches a module missing from DECLARED)."""
    from kbroker.handlers.registry import DECLARED, advertised, load_handlers

    handlers = load_handlers()
    assert sorted(handlers) == sorted(DECLARED)
    expected = [(h.api_key, h.advertised_min, h.max_version) for _, h in sorted(handlers.items())]
    assert advertised(True) == expected
    assert advertised(False) == [e for e in expected if not handlers[e[0]].cluster_only]
