"""README's "Command line" section, run line by line against a kbroker process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.process import REPO, BrokerProcess


def command_line_block() -> str:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return str(block)


def test_the_readme_command_line_examples_run(tmp_path: Path) -> None:
    shim = tmp_path / "bin" / "kbroker"  # `kbroker` as `pip install` would put it on PATH
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kbroker "$@"\n')
    shim.chmod(0o755)
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
        environ |= {"PATH": f"{shim.parent}:{environ['PATH']}", "PYTHONPATH": str(REPO)}
        environ["KBROKER_BOOTSTRAP"] = broker.bootstrap
        outputs = []
        for line in command_line_block().splitlines():
            result = subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=environ, timeout=60)
            assert result.returncode == 0, f"{line}\n{result.stderr}"
            outputs.append(result.stdout)
        # murmur2 over 3 partitions, as Kafka's Java producer would place them
        assert sorted(outputs[4].splitlines()) == ["0/0 k2=v2 source=shell", "2/0 k1=v1 source=shell"]
        assert outputs[5].count('"topic": "orders"') == 2
    finally:
        broker.stop()
