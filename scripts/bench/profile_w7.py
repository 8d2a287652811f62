#!/usr/bin/env python3
"""Where kbroker's time goes under W7 (many clients): a CPU profile, the event loop's lag, GC pauses.

    .venv/bin/python scripts/bench/profile_w7.py [--seconds 20] [--clients 50] [--py-spy] [--slow-ms 5]

Starts kbroker (unpinned, defaults) through scripts/bench/instrumented_serve.py, runs the W7 load from
scripts/bench/loadgen against it (every record read back and checked) and prints:
- the W7 figures of this run (latency percentiles, first acknowledgements, broker CPU);
- the event loop's lag: how late a 2 ms timer fired (p50/p99/max, and how often over 5 and 10 ms): the
  time a ready callback (a request's data, a produce's acknowledgement) waited for the loop;
- every garbage collection during the run: count, total and longest pause per generation;
- with --py-spy: `py-spy record --native` of the broker for the measured part (py-spy stops the process
  for each native stack it takes: that run's latencies are not figures), summarised
  as the share of CPU samples by function (own time) and by request stage (inclusive), written in full to
  --out (a collapsed-stack file that flame-graph tools read);
- with --slow-ms N: the loop in asyncio debug mode, and every callback that held it for more than N ms
  (debug mode costs CPU: take latencies from a run without it).

A profile's proportions hold on a busy machine; its latencies do not: say how busy it was.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from brokers import KBroker
from workloads import LOADGEN, build_loadgen

HERE = Path(__file__).resolve().parent
# Stages: a sample counts for every stage one of whose frames is on its stack (inclusive share).
STAGES = {
    "produce handler (kbroker/handlers/produce.py)": ("(kbroker/handlers/produce.py:",),
    "fetch handler (kbroker/handlers/fetch.py)": ("(kbroker/handlers/fetch.py:",),
    "log: append, read, index (kbroker/log/)": ("(kbroker/log/",),
    "fetch waiters (kbroker/waiters.py)": ("(kbroker/waiters.py:",),
    "protocol codec: decode, encode (protocol/)": ("(protocol/", "(<protocol.codegen>"),
    "response send: writev, sendfile, cork (kbroker/sendfile.py, uvloop write)": (
        "(kbroker/sendfile.py:",
        "UVStream__initiate_write",
        "uv__try_write",
    ),
    "timers (uvloop timer callbacks)": ("uv__run_timers",),
    "garbage collector": ("gc_collect_main",),
    "logging (structlog)": ("(structlog/",),
}
IDLE = ("epoll_pwait", "epoll_wait")  # py-spy --native counts the loop's wait for events: left out


class InstrumentedKBroker(KBroker):
    def command(self) -> list[str]:
        python, _, _, *rest = super().command()  # python -m kbroker serve ...
        return [python, str(HERE / "instrumented_serve.py"), *rest]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))]


def summarise_profile(path: Path, top: int) -> list[str]:
    """Share of samples by own function and by stage, from py-spy's raw (collapsed) output."""
    own: collections.Counter[str] = collections.Counter()
    stages: collections.Counter[str] = collections.Counter()
    threads: collections.Counter[str] = collections.Counter()
    total = idle = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = stack.split(";")
        if any(frames[-1].startswith(name) for name in IDLE):
            idle += count
            continue
        total += count
        threads[frames[0]] += count
        own[frames[-1].split(" (")[0] + " (" + frames[-1].split(" (")[-1].split(":")[0] + ")"] += count
        for stage, needles in STAGES.items():
            if any(needle in frame for frame in frames for needle in needles):
                stages[stage] += count
    total = max(total, 1)
    lines = [f"{total:,} CPU samples (py-spy; {idle:,} more in the loop's wait for events, left out)", "", "by thread:"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in threads.most_common(6)]
    lines += ["", "by stage (inclusive; a sample may count in several):"]
    lines += [f"  {100 * stages[s] / total:5.1f}%  {s}" for s in STAGES]
    lines += ["", f"top {top} functions by own time:"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in own.most_common(top)]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="measured part of the W7 load")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rate", type=int, default=10, help="records/s per producer")
    parser.add_argument("--py-spy", action="store_true", help="sample the broker with py-spy --native")
    parser.add_argument("--slow-ms", type=float, default=0.0, help="asyncio debug mode: report callbacks over this")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "kbroker-w7-profile.txt")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the broker's environment")
    args = parser.parse_args()
    build_loadgen()
    cpus = f"0-{(os.cpu_count() or 1) - 1}"
    broker = InstrumentedKBroker(cpus)
    stats_path = broker.workdir / "stats.json"
    extra = dict(item.split("=", 1) for item in args.env)
    base_environment = broker.environment

    def environment() -> dict[str, str]:
        env = base_environment()
        env["KBROKER_BENCH_STATS"] = str(stats_path)
        if args.slow_ms:
            env["KBROKER_BENCH_SLOW_MS"] = str(args.slow_ms)
        env.update(extra)
        return env

    broker.environment = environment  # type: ignore[method-assign]
    spy = None
    try:
        broker.start()
        assert broker.process is not None
        warm = 3.0
        command = [str(LOADGEN), "-bootstrap", broker.bootstrap, "-topic", "w7", "-mode", "many"]
        command += ["-clients", str(args.clients), "-rate", str(args.rate), "-warm", f"{warm}s"]
        command += ["-duration", f"{args.seconds}s", "-size", "1024", "-acks", "all"]
        command += ["-broker-pid", str(broker.process.pid)]
        load = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if args.py_spy:
            time.sleep(1 + warm)  # the consumers' first second, then the warm part
            py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
            spy = subprocess.Popen(
                [py_spy, "record", "--pid", str(broker.process.pid), "--native", "--threads"]
                + ["--rate", "200", "--format", "raw", "--duration", str(int(args.seconds)), "-o", str(args.out)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        out, err = load.communicate(timeout=600)
        if load.returncode != 0:
            print(f"W7 FAILED: {err.strip()}", file=sys.stderr)
            return 1
        if spy is not None:
            _, spy_err = spy.communicate(timeout=120)
            if spy.returncode != 0:
                print(f"py-spy failed: {spy_err.strip()}", file=sys.stderr)
        broker.stop()
        result = json.loads(out.strip().splitlines()[-1])
        stats = json.loads(stats_path.read_text())
    finally:
        if spy is not None and spy.poll() is None:
            spy.kill()
        broker.cleanup()
    print(
        f"W7 with {args.clients} producers x {args.rate}/s, {args.seconds:.0f} s measured, machine load {load_average()}"
    )
    for name in ("ack", "e2e"):
        print(
            f"  {name:4s} p50 {result[f'{name}_p50_ms']:.2f} ms  p99 {result[f'{name}_p99_ms']:.2f} ms"
            f"  p99.9 {result[f'{name}_p999_ms']:.2f} ms  max {result[f'{name}_max_ms']:.2f} ms"
            f"  ({result[f'{name}_samples']:,} records)"
        )
    cpu = result["produce_broker_cpu_s"] / result["produce_seconds"]
    print(f"  first ack p50 {result['first_ack_p50_ms']:.0f} ms, max {result['first_ack_max_ms']:.0f} ms")
    print(
        f"  broker CPU {100 * cpu:.0f}% of a core, {1e6 * result['produce_broker_cpu_s'] / result['records']:.0f} us per record"
    )
    start, end = result["window_start_unix_ms"], result["window_end_unix_ms"]
    lags = [lag for at, lag in stats["loop_lag_ms"] if start <= at <= end]
    print(
        f"event loop lag (a 2 ms timer, {len(lags):,} samples): p50 {percentile(lags, 0.5):.2f} ms,"
        f" p99 {percentile(lags, 0.99):.2f} ms, max {max(lags, default=0):.2f} ms;"
        f" over 5 ms: {sum(1 for x in lags if x > 5)}, over 10 ms: {sum(1 for x in lags if x > 10)}"
    )
    print(f"garbage collections in the measured window (objects frozen: {stats['gc_frozen']:,}):")
    for generation in (0, 1, 2):
        taken = [(pause, freed) for at, g, pause, freed in stats["gc_pauses"] if g == generation and start <= at <= end]
        if taken:
            pauses = [pause for pause, _ in taken]
            print(
                f"  generation {generation}: {len(pauses):,} collections, {sum(pauses):.0f} ms in all,"
                f" median {statistics.median(pauses):.2f} ms, longest {max(pauses):.2f} ms,"
                f" {sum(freed for _, freed in taken):,} objects freed"
            )
    if stats["slow_callbacks"]:
        print(f"callbacks over {args.slow_ms} ms (asyncio debug mode): {len(stats['slow_callbacks'])}")
        for text, count in collections.Counter(stats["slow_callbacks"]).most_common(15):
            print(f"  {count:4d} x {text[:200]}")
    if spy is not None and args.out.exists():
        print()
        print("\n".join(summarise_profile(args.out, args.top)))
        print(f"\nfull profile (collapsed stacks): {args.out}")
    return 0


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    sys.exit(main())
