"""The command line, run as `python -m kbroker` in a subprocess (and its config loading in-process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kbroker.cli import build_parser, load_config
from kbroker.config import ConfigError, Endpoint
from kbroker.config_defs import BROKER_PROPERTIES

REPO = Path(__file__).resolve().parents[1]


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
    environ["PYTHONPATH"] = str(REPO)
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "kbroker", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
        cwd=cwd or REPO,
    )


# --------------------------------------------------------------------------- help


def test_top_level_help_documents_commands_options_and_properties() -> None:
    result = run("--help")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for text in ("serve", "configs", "--listen", "--advertised-listener", "--data-dir", "--config KEY=VALUE"):
        assert text in out
    for text in ("--config-file", "--log-level", "--log-format", "KBROKER_ADVERTISED_LISTENER"):
        assert text in out
    for name, prop in BROKER_PROPERTIES.items():
        assert (name in out) or prop.ignored, name  # the ~200 ignored ones are counted, listed by `kbroker configs`
    assert "without effect" in out


def test_serve_help_documents_every_option() -> None:
    result = run("serve", "--help")
    assert result.returncode == 0, result.stderr
    for text in ("--listen HOST:PORT", "--advertised-listener HOST:PORT", "--data-dir DIR", "--config KEY=VALUE"):
        assert text in result.stdout
    for text in ("--config-file FILE", "--log-level LEVEL", "--log-format FORMAT", "127.0.0.1:9092", "./data"):
        assert text in result.stdout
    assert "log.retention.ms" in result.stdout


def test_configs_lists_types_defaults_and_kbroker_differences() -> None:
    result = run("configs")
    assert result.returncode == 0, result.stderr
    assert "group.initial.rebalance.delay.ms  (int, default 0" in result.stdout
    assert "Kafka's default is 3000" in result.stdout
    assert "log.retention.hours  (int, default 336, topic config retention.ms)" in result.stdout
    topic = run("configs", "--topic")
    assert "retention.ms  (long, default from log.retention.ms > log.retention.minutes > log.retention.hours" in (
        topic.stdout
    )


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0 and result.stdout.startswith("kbroker ")


# --------------------------------------------------------------------------- errors exit 2 with one line


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["serve", "--config", "num.partition=3"], "did you mean 'num.partitions'"),
        (["serve", "--config", "num.partitions=zero"], "num.partitions"),
        (["serve", "--config", "num.partitions"], "KEY=VALUE"),
        (["serve", "--config-file", "/nonexistent/server.properties"], "cannot read config file"),
        (["serve", "--listen", "localhost"], "HOST:PORT"),
        (["serve", "--advertised-listener", "0.0.0.0:9092"], "reachable"),
        (["serve", "--log-level", "loud"], "log level"),
        (["serve", "--log-format", "xml"], "log format"),
        (["serve", "--no-such-flag"], "unrecognized arguments"),
        (["frobnicate"], "invalid choice"),
        ([], "usage"),
    ],
)
def test_errors_exit_2_with_a_short_message(args: list[str], fragment: str) -> None:
    result = run(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert fragment in result.stderr
    if args:
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_bad_value_in_config_file_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("log.segment.bytes=10\n")
    result = run("serve", "--config-file", str(path))
    assert result.returncode == 2 and "log.segment.bytes" in result.stderr


# --------------------------------------------------------------------------- serve hands the config to server.run


def test_serve_passes_the_built_config_to_server_run(tmp_path: Path) -> None:
    """A stand-in kbroker.server records what serve gives it; its return value is the exit status."""
    (tmp_path / "server.properties").write_text("num.partitions=2\nlog.retention.hours=1\nnum.io.threads=8\n")
    probe = textwrap.dedent(
        """
        import sys, types
        module = types.ModuleType("kbroker.server")
        def run(config):
            print(config.listen, config.advertised, config.data_dir, config.get("num.partitions"),
                  config.topic_defaults()["retention.ms"], config.fsync_before_ack)
            return 7
        module.run = run
        sys.modules["kbroker.server"] = module
        from kbroker.cli import main
        sys.exit(main(sys.argv[1:]))
        """
    )
    args = ["serve", "--config-file", "server.properties", "--config", "num.partitions=5"]
    args += ["--config", "kbroker.fsync.before.ack=true", "--log-format", "json"]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
    environ |= {"PYTHONPATH": str(REPO), "KBROKER_LISTEN": "0.0.0.0:9555", "KBROKER_DATA_DIR": "d"}
    result = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60, env=environ, cwd=tmp_path
    )
    assert result.returncode == 7, result.stderr
    data_dir = (tmp_path / "d").resolve()
    assert result.stdout.split() == ["0.0.0.0:9555", "127.0.0.1:9555", str(data_dir), "5", "3600000", "True"]
    assert '"event": "config_ignored"' in result.stderr and '"name": "num.io.threads"' in result.stderr


def test_serve_loads_with_the_collector_off_and_runs_the_broker_with_it_on(tmp_path: Path) -> None:
    """The objects loaded before the broker starts are frozen out of the collector's reach (start-up time);
    the broker itself runs with the collector on, and a failed start leaves it on too."""
    probe = textwrap.dedent(
        """
        import gc, sys, types
        module = types.ModuleType("kbroker.server")
        def run(config):
            print(gc.isenabled(), gc.get_freeze_count() > 10000)
            return 0
        module.run = run
        sys.modules["kbroker.server"] = module
        from kbroker.cli import main
        status = main(sys.argv[1:])
        print(gc.isenabled())
        sys.exit(status)
        """
    )
    for args, expected in ((["--listen", "127.0.0.1:0"], "True True\nTrue"), (["--listen", "nowhere"], "True")):
        result = subprocess.run(
            [sys.executable, "-c", probe, "serve", "--data-dir", "d", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd=tmp_path,
        )
        assert result.stdout.strip() == expected, result.stderr


# --------------------------------------------------------------------------- precedence, in-process


def test_flags_beat_environment_and_config_pairs_beat_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=2\nlisteners=PLAINTEXT://127.0.0.1:7000\nlog.dir=/from/file\n")
    monkeypatch.setenv("KBROKER_ADVERTISED_LISTENER", "env-host:1")
    monkeypatch.setenv("KBROKER_DATA_DIR", str(tmp_path / "env"))
    args = build_parser().parse_args(
        ["serve", "--config-file", str(path), "--config", "num.partitions=3", "--config", "num.partitions=4"]
        + ["--advertised-listener", "flag-host:2"]
    )
    config = load_config(args)
    assert config.get("num.partitions") == 4
    assert config.listen == Endpoint("127.0.0.1", 7000)
    assert config.advertised == Endpoint("flag-host", 2)
    assert config.data_dir == (tmp_path / "env").resolve()
    assert config.is_set("num.partitions") and config.explicit["num.partitions"] == "4"


def test_config_value_may_contain_equals_signs() -> None:
    args = build_parser().parse_args(["serve", "--config", "advertised.listeners=PLAINTEXT://h:1"])
    assert load_config(args).advertised == Endpoint("h", 1)
    with pytest.raises(ConfigError):
        load_config(build_parser().parse_args(["serve", "--config", "=3"]))


# --------------------------------------------------------------------------- --log-format output


_LOG_PROBE = """
import logging, sys, structlog
from kbroker.logging_setup import configure_logging
configure_logging(sys.argv[1], sys.argv[2])
log = structlog.get_logger().bind(conn=3)
log.debug("hidden_debug", a=1)
log.info("server_started", port=9092, note="two words")
logging.getLogger("asyncio").warning("from %s", "stdlib")
try:
    1 / 0
except ZeroDivisionError:
    log.exception("handler_failed", api="Fetch")
"""


def _log_lines(level: str, fmt: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
    environ["PYTHONPATH"] = str(REPO)
    result = subprocess.run(
        [sys.executable, "-c", _LOG_PROBE, level, fmt], capture_output=True, text=True, timeout=60, env=environ
    )
    assert result.returncode == 0 and result.stdout == "", result.stderr
    return result.stderr.splitlines()


def test_console_logs_are_one_key_value_line_per_event() -> None:
    lines = _log_lines("info", "console")
    assert len(lines) == 3, lines
    started, stdlib, failed = lines
    assert started.startswith("timestamp=") and " level=info event=server_started " in started
    assert "conn=3" in started and "port=9092" in started and 'note="two words"' in started
    assert "level=warning" in stdlib and 'event="from stdlib"' in stdlib and "logger=asyncio" in stdlib
    assert "level=error event=handler_failed" in failed and "ZeroDivisionError" in failed


def test_json_logs_are_one_object_per_line_and_debug_shows_when_asked() -> None:
    events = [json.loads(line) for line in _log_lines("debug", "json")]
    assert [e["event"] for e in events] == ["hidden_debug", "server_started", "from stdlib", "handler_failed"]
    assert events[0]["level"] == "debug" and events[0]["conn"] == 3 and "timestamp" in events[0]
    assert "ZeroDivisionError" in events[3]["exception"]
