"""The quick-look lines of docs/gateway.md, run as written against a real broker."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.http.conftest import HttpBroker
from tests.process import REPO


def quick_look() -> list[str]:
    text = (REPO / "docs" / "gateway.md").read_text()
    block = text.split("Quick look", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_quick_look_runs_as_written(tmp_path: Path) -> None:
    broker = HttpBroker(tmp_path / "data").start()
    try:
        lines = quick_look()
        assert len(lines) == 5
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        kbroker = bin_dir / "kbroker"  # `kbroker` as installed, run from this checkout
        kbroker.write_text(f'#!/bin/sh\nexec {sys.executable} -m kbroker "$@"\n')
        kbroker.chmod(0o755)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO),
               "KBROKER_BOOTSTRAP": broker.bootstrap}  # fmt: skip
        outputs = []
        for line in lines:
            command = line.replace("localhost:8082", f"127.0.0.1:{broker.http_port}")
            result = subprocess.run(command, shell=True, env=env, capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, (line, result.stderr)
            outputs.append(result.stdout)
        assert json.loads(outputs[1])["offsets"][0]["offset"] == 0
        assert json.loads(outputs[2])["instance_id"] == "c1"
        records = json.loads(outputs[4])
        assert records == [{"topic": "orders", "key": "alice", "value": {"item": "book"}, "partition": 0, "offset": 0}]
        documented = re.search(r"The last line prints `(.+?)`", (REPO / "docs" / "gateway.md").read_text())
        assert documented is not None and json.loads(documented.group(1)) == records
    finally:
        broker.stop()
