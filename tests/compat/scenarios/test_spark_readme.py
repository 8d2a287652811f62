"""README's "Use with Spark" section, run as written in a fresh copy of the repository.

The copy holds the repository's files only (no .venv, no data), so the steps create the virtual environment,
install kbroker with its spark extra, start the broker, produce with `kbroker produce`, read with PySpark
(the connector from spark.jars.packages) and run the pipeline. The only change to the text: the broker's
address 127.0.0.1:9092 becomes a free port (and KBROKER_LISTEN / KBROKER_BOOTSTRAP say the same to
`kbroker serve` and `kbroker produce`), so the test does not collide with a broker already on 9092.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.process import REPO, free_port

README_ADDRESS = "127.0.0.1:9092"
pytestmark = pytest.mark.timeout(1500)


def spark_section_blocks() -> list[tuple[str, str]]:
    """(language, code) of each fenced block of README's "Use with Spark" section, in order."""
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Use with Spark\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def fresh_copy(target: Path) -> Path:
    """The repository's tracked and untracked-but-not-ignored files, as a new checkout would have them."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard"], capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_the_readme_spark_steps_work_as_written(tmp_path: Path) -> None:
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("Spark needs Java 17+")
    if os.environ.get("KBROKER_BOOTSTRAP"):
        pytest.skip("the README's steps start kbroker itself; a run against another broker has nothing to add")
    blocks = spark_section_blocks()
    assert [language for language, _ in blocks] == ["bash", "python", "bash"], blocks
    repo = fresh_copy(tmp_path / "kbroker")
    address = f"127.0.0.1:{free_port()}"
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("KBROKER_", "PYTHON", "VIRTUAL_ENV"))}
    environ |= {"KBROKER_LISTEN": address, "KBROKER_BOOTSTRAP": address}

    def run(language: str, code: str, timeout: float) -> tuple[int, str]:
        """Run one block; its exit status and output (to a file: the broker started in the background keeps
        writing there after the block ends)."""
        code = code.replace(README_ADDRESS, address)
        if language == "python":
            (repo / "readme_step.py").write_text(code)
            command = [str(repo / ".venv" / "bin" / "python"), "readme_step.py"]
        else:
            # $! after the block: the process a trailing `&` started (the broker), to stop at the end
            command = ["bash", "-euo", "pipefail", "-c", code + '\necho "${!:-}" >> .readme-background-pid\n']
        log = tmp_path / f"step-{len(list(tmp_path.glob('step-*')))}.log"
        with log.open("w") as out:
            status = subprocess.run(
                command, cwd=repo, env=environ, stdout=out, stderr=subprocess.STDOUT, timeout=timeout
            )
        return status.returncode, log.read_text(errors="replace")

    setup_status, setup = run(*blocks[0], timeout=900)
    pid_file = repo / ".readme-background-pid"
    try:
        assert setup_status == 0, setup[-5000:]
        assert "produced 2 records to access-log" in setup

        read_status, read = run(*blocks[1], timeout=300)
        assert read_status == 0, read[-5000:]
        assert "Row(key='home', value='GET /')" in read and "Row(key='cart', value='POST /cart')" in read

        pipeline_status, pipeline = run(*blocks[2], timeout=900)
        assert pipeline_status == 0, pipeline[-5000:]
        assert "MISMATCH" not in pipeline and pipeline.count("OK:") == 2, pipeline[-5000:]
    finally:
        for pid in pid_file.read_text().split() if pid_file.exists() else []:
            try:
                os.kill(int(pid), signal.SIGTERM)
            except ProcessLookupError:
                pass
