"""README's "Command line" section, run line by line against a kbroker process (with its HTTP listener, for
`kbroker queue`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.http.conftest import HttpBroker
from tests.process import REPO


def command_line_blocks() -> list[str]:
    """The section's two examples: the Kafka-protocol commands, then `kbroker queue`."""
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 2 and "kbroker queue" in blocks[1] and "kbroker queue" not in blocks[0]
    return [str(block) for block in blocks]


def test_the_readme_command_line_examples_run(tmp_path: Path) -> None:
    shim = tmp_path / "bin" / "kbroker"  # `kbroker` as `pip install` would put it on PATH
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kbroker "$@"\n')
    shim.chmod(0o755)
    broker = HttpBroker(tmp_path / "data").start()
    try:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
        environ |= {"PATH": f"{shim.parent}:{environ['PATH']}", "PYTHONPATH": str(REPO)}
        environ["KBROKER_BOOTSTRAP"] = broker.bootstrap
        environ["KBROKER_HTTP"] = f"127.0.0.1:{broker.http_port}"
        outputs = []
        kafka, queue = command_line_blocks()
        for line in (kafka + queue).splitlines():
            result = subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=environ, timeout=60)
            assert result.returncode == 0, f"{line}\n{result.stderr}"
            outputs.append(result.stdout)
        # murmur2 over 3 partitions, as Kafka's Java producer would place them
        assert sorted(outputs[4].splitlines()) == ["0/0 k2=v2 source=shell", "2/0 k1=v1 source=shell"]
        assert outputs[5].count('"topic": "orders"') == 2
        queue_outputs = outputs[len(kafka.splitlines()) :]
        assert queue_outputs[2] == "resize photo 17\nresize photo 18\n"  # the delayed invoice is not due
        assert ["worker", "2", "1"] in [line.split() for line in queue_outputs[3].splitlines()]  # position, lag
        assert '"depth": 3' in queue_outputs[4]
        assert queue_outputs[-1] == "deleted queue customer-42 (consumers deleted: none)\n"
    finally:
        broker.stop()
