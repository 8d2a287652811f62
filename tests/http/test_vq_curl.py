"""The virtual-queue curl lines of README.md, run as written (with curl) against a real broker."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.http.conftest import HttpBroker
from tests.process import REPO


def readme_lines() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text.split("Virtual queues:", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_readme_virtual_queue_lines_run_as_written(tmp_path: Path) -> None:
    broker = HttpBroker(tmp_path / "data").start()
    try:
        lines = readme_lines()
        assert len(lines) == 5 and all(line.startswith("curl ") for line in lines)
        script = tmp_path / "vq.sh"
        body = "\n".join(line.replace("localhost:8082", f"127.0.0.1:{broker.http_port}") + "; echo" for line in lines)
        script.write_text("set -e\n" + body + "\n")
        result = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        outputs = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
        assert [o["offset"] for o in outputs[:2]] == [0, 1]
        first = outputs[2]
        assert [r["value"] for r in first["records"]] == ["resize photo 17"] and first["next_offset"] == 1
        assert "blocked_until" in first
        assert outputs[3] == {"queue": "customer-42", "consumer": "worker", "position": 1, "previous": None}
        (record,) = outputs[4]["records"]
        assert record["value"] == "send invoice" and record["headers"] == {"kbroker-deliver-after-ms": "1000"}
    finally:
        broker.stop()
