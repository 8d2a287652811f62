"""README's "Quick start" (scripts/serve) and "Install" (a wheel into a new virtual environment), run as
written, with a free port and a temporary data directory added to `serve`."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process import REPO, free_port


def readme_section(title: str) -> str:
    readme = (REPO / "README.md").read_text()
    start = readme.index(f"\n## {title}\n")
    return readme[start : readme.index("\n## ", start + 1)]


def bash_commands(section: str) -> list[str]:
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.DOTALL):
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            if command:
                commands.append(command)
    return commands


def wait_until_listening(process: subprocess.Popen[bytes], port: int, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"serve did not listen within {timeout}s:\n{log.read_text()}")


def stopped(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.terminate()
    return process.wait(timeout=30)


def run(command: list[str], *, stdin: str = "", env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    result = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=300, env=env, cwd=cwd)
    assert result.returncode == 0, f"{command}: {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_quick_start_serve(tmp_path: Path) -> None:
    commands = bash_commands(readme_section("Quick start"))
    assert commands[0] == "scripts/serve"
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(REPO / "scripts/serve"), "--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "data")],
            cwd=REPO,
            stdout=out,
            stderr=out,
        )
    try:
        wait_until_listening(process, port, log, timeout=180)
        info = run([sys.executable, "-m", "kbroker", "cluster", "info", "--bootstrap", f"127.0.0.1:{port}"])
        assert re.search(rf"127\.0\.0\.1\s+{port}\b", info), info
    finally:
        assert stopped(process) == 0, log.read_text()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The README's wheel steps into a new virtual environment; yields its bin directory."""
    work = tmp_path_factory.mktemp("install")
    commands = bash_commands(readme_section("Install"))
    wheel_steps = [c for c in commands if c.startswith("python3 -m pip wheel") or "dist/kbroker-*.whl" in c]
    assert wheel_steps == ["python3 -m pip wheel --no-deps -w dist .", "python3 -m pip install dist/kbroker-*.whl"]
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, timeout=120)
    python = work / "venv/bin/python"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    # the README's commands, `python3` being the new environment's and `.` the checkout
    run([str(python), "-m", "pip", "wheel", "--no-deps", "-w", str(work / "dist"), str(REPO)], env=env)
    wheels = list((work / "dist").glob("kbroker-*.whl"))
    assert len(wheels) == 1
    run([str(python), "-m", "pip", "install", str(wheels[0])], env=env)
    yield work / "venv/bin"


def test_install_a_wheel_and_use_the_command(installed: Path, tmp_path: Path) -> None:
    kbroker = str(installed / "kbroker")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # the installed package, not the checkout
    where = run([str(installed / "python"), "-c", "import kbroker; print(kbroker.__file__)"], env=env, cwd=tmp_path)
    assert "site-packages" in where and not where.startswith(str(REPO))
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [kbroker, "serve", "--data-dir", str(tmp_path / "kbroker-data"), "--listen", bootstrap],
            cwd=tmp_path,
            stdout=out,
            stderr=out,
            env=env,
        )
    try:
        wait_until_listening(process, port, log)
        client = {**env, "KBROKER_BOOTSTRAP": bootstrap}
        run([kbroker, "topic", "create", "demo"], env=client, cwd=tmp_path)
        run([kbroker, "produce", "demo"], stdin="hello\n", env=client, cwd=tmp_path)
        out = run([kbroker, "consume", "demo", "--from-beginning", "--count", "1"], env=client, cwd=tmp_path)
        assert out.strip().splitlines()[-1].endswith("hello"), out
    finally:
        assert stopped(process) == 0, log.read_text()
    assert (tmp_path / "kbroker-data").is_dir()
