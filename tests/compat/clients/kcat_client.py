"""kcat (Debian's build, bundling librdkafka 2.0.x) as a client of the compatibility suite.

kcat is a text tool: records go in on stdin split by delimiters (0x1e between records, 0x1f between key and
value), come out as JSON envelopes (-J). It has no admin commands, sets no timestamps, and puts the same
headers (-H) on every record of a run.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby

from tests.compat.clients.adapter import (
    LIBRDKAFKA_APIS,
    Client,
    ClientError,
    Consumed,
    ConsumeResult,
    OffsetSpec,
    Record,
    Start,
)

RECORD_SEP = b"\x1e"
KEY_SEP = b"\x1f"
RESET = {"earliest": "earliest", "latest": "latest", "none": "error"}

KCAT_MISSING = {
    "group.consumer_protocol": "kcat's group members are not driven by the suite",
    "produce.timestamp": "kcat cannot set a record timestamp",
    "produce.record_headers": "kcat puts the same -H headers on every record of a run",
    "produce.binary": "kcat reads delimited text on stdin",
    "consume.position": "kcat does not report its position",
    "create_topic": "kcat has no admin commands",
    "describe_topic": "kcat has no admin commands",
    "topic_configs": "kcat has no admin commands",
    "alter_config": "kcat has no admin commands",
    "create_partitions": "kcat has no admin commands",
    "delete_topic": "kcat has no admin commands",
    "delete_records": "kcat has no admin commands",
    "describe_group": "kcat has no admin commands",
    "group": "kcat -G (balanced consumer) commits by itself and reports no assignment to its caller",
    "txn": "kcat has no transactional producer (no begin, commit or abort)",
    "produce_idempotent": "kcat takes -X enable.idempotence=true but reports no offsets (librdkafka: confluent-kafka)",
}


def _run(args: list[str], stdin: bytes | None, timeout_s: float) -> tuple[int | None, bytes, str]:
    """Run kcat; on timeout stop it and return what it printed (returncode None)."""
    process = subprocess.Popen(["kcat", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = process.communicate(stdin, timeout=timeout_s)
        return process.returncode, out, err.decode(errors="replace")
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        return None, out, err.decode(errors="replace")


def _text(value: str | None) -> bytes | None:
    return None if value is None else value.encode()


@dataclass
class KcatClient(Client):
    name: str = "kcat"
    missing: dict[str, str] = field(default_factory=lambda: dict(KCAT_MISSING))
    op_apis: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(LIBRDKAFKA_APIS))

    def produce(
        self, bootstrap: str, topic: str, records: Sequence[Record], acks: str = "all", compression: str = "none"
    ) -> list[tuple[int, int]]:
        if len({r.headers for r in records}) > 1:
            raise ClientError("unsupported", "kcat cannot give records of one run different headers")
        # -Z turns empty values into nulls, so null values go in runs of their own, in order.
        for (null_value, partition), run in groupby(records, key=lambda r: (r.value is None, r.partition)):
            self._produce_run(bootstrap, topic, list(run), acks, compression, null_value, partition)
        return [(-1, -1)] * len(records)

    def _produce_run(
        self,
        bootstrap: str,
        topic: str,
        records: list[Record],
        acks: str,
        compression: str,
        null_value: bool,
        partition: int | None,
    ) -> None:
        args = ["-P", "-b", bootstrap, "-t", topic, "-K", r"\x1f", "-D", r"\x1e", "-X", f"acks={acks}"]
        args += ["-X", f"compression.codec={compression}", "-X", "linger.ms=5"]
        if partition is not None:
            args += ["-p", str(partition)]
        if null_value:
            args.append("-Z")
        for name, header in records[0].headers:
            args += ["-H", f"{name}={(header or b'').decode()}"]
        lines: list[bytes] = []
        for r in records:
            key = b"" if r.key is None else r.key + KEY_SEP
            lines.append(key + (r.value or b""))
        code, _, err = _run(args, RECORD_SEP.join(lines) + RECORD_SEP, timeout_s=60)
        if code != 0 or "% ERROR" in err:
            kind = "message_too_large" if "Message size too large" in err else "other"
            raise ClientError(kind, f"kcat -P exited {code}: {err.strip()}")

    def consume(
        self,
        bootstrap: str,
        topic: str,
        partitions: Sequence[int],
        start: Start,
        max_records: int,
        timeout_s: float,
        reset: str = "earliest",
        isolation: str = "read_uncommitted",
    ) -> ConsumeResult:
        args = ["-C", "-b", bootstrap, "-t", topic, "-J", "-u", "-c", str(max_records)]
        args += ["-X", f"topic.auto.offset.reset={RESET[reset]}", "-X", f"isolation.level={isolation}"]
        if isinstance(start, dict):
            ((partition, offset),) = start.items()
            args += ["-p", str(partition), "-o", str(offset)]
        else:
            args += ["-o", "beginning" if start == "earliest" else "end"]
            if len(partitions) == 1:
                args += ["-p", str(partitions[0])]
        _, out, err = _run(args, None, timeout_s)
        records = [_consumed(json.loads(line)) for line in out.splitlines() if line.strip()]
        result = ConsumeResult(records=[r for r in records if r.partition in partitions][:max_records])
        errors = [line for line in err.splitlines() if line.startswith("% ERROR")]
        if errors:
            kind = "offset_out_of_range" if "Offset out of range" in errors[0] else "other"
            result.error, result.error_message = kind, "\n".join(errors)
        return result

    def list_offset(self, bootstrap: str, topic: str, partition: int, spec: OffsetSpec) -> int:
        timestamp = {"earliest": -2, "latest": -1}.get(str(spec), spec)
        code, out, err = _run(["-Q", "-b", bootstrap, "-t", f"{topic}:{partition}:{timestamp}"], None, 30)
        found = re.search(rb"\[\d+\] offset (-?\d+)", out)
        if code != 0 or found is None:
            raise ClientError("other", f"kcat -Q exited {code}: {err.strip()} {out!r}")
        return int(found.group(1))

    def partitions_for(self, bootstrap: str, topic: str) -> list[int]:
        for _ in range(50):
            code, out, err = _run(["-L", "-b", bootstrap, "-t", topic, "-J"], None, 30)
            if code != 0:
                raise ClientError("other", f"kcat -L exited {code}: {err.strip()}")
            (described,) = json.loads(out)["topics"]
            if "error" not in described and described["partitions"]:
                return sorted(p["partition"] for p in described["partitions"])
        raise ClientError("unknown_topic", f"{topic} did not appear in kcat -L")


def _consumed(envelope: dict[str, object]) -> Consumed:
    flat = envelope.get("headers") or []
    assert isinstance(flat, list)
    return Consumed(
        partition=int(str(envelope["partition"])),
        offset=int(str(envelope["offset"])),
        key=_text(envelope.get("key")),  # type: ignore[arg-type]
        value=_text(envelope.get("payload")),  # type: ignore[arg-type]
        headers=tuple((str(flat[i]), _text(flat[i + 1])) for i in range(0, len(flat), 2)),
        timestamp=int(str(envelope["ts"])),
    )
