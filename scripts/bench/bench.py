#!/usr/bin/env python3
"""Side-by-side benchmark: Apache Kafka and kbroker in turn, same machine, same load generator.

    scripts/bench/run [--rounds 3] [--workloads W1,W2,W3,W4,W5,W6,W7,E1,CL,S1,S2,S3,S4] [--scale 1.0] [--no-docs]
                      [--unpinned]

Each round starts Kafka, runs the workloads, stops it, then does the same with kbroker (A, B, A, B).
Brokers run on core 0, the load generator on core 1 (taskset), for both alike. The load generator
(scripts/bench/loadgen, Go + franz-go) reads every topic back and fails on any lost, duplicated or
reordered record; so does this script. Prints median, min, max per figure and the ratio
kbroker/Kafka, and writes the table into docs/performance.md (unless --no-docs): pinned runs into the
bench:results section, --unpinned runs into bench:results-unpinned.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from brokers import REPO, Broker, Kafka, KBroker, environment_note, install_kbroker
from scenarios import CL_DESCRIPTION, S4_DESCRIPTION, cleaner_latency, many_partitions
from workloads import ALIASES, WARMUP, WORKLOADS, Figure, build_loadgen, run_workload

BROKER_CPUS = "0"
LOADGEN_CPUS = "1"
EXTRA_STARTS = 2  # S1: starts per round besides the one the workloads use
SETTLE_SECONDS = 2.0  # pause before each start: the previous broker's data deletion settles
DOC = REPO / "docs" / "performance.md"
SECTIONS = {False: "bench:results", True: "bench:results-unpinned"}  # pinned, unpinned: each its own table

S1 = Figure("S1", "S1 start to first ApiVersions answer", "startup_ms", "ms", False, "<= 150 ms")
S2 = Figure("S2", "S2 idle RSS (1 s after start)", "rss_mib", "MiB", False, "<= 40 MB")
S3 = Figure("S3", "S3 recovery scan after kill -9 (kbroker)", "scan_mb_per_s", "MB/s", True, ">= 500 MB/s")
S3_RESTART = Figure("S3 restart", "S3 restart to first answer after kill -9", "restart_ms", "ms", False)

Samples = dict[str, dict[str, list[float]]]  # figure name -> broker name -> samples


def note(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def one_broker(
    broker: Broker,
    selected: list[str],
    extras: list[str],
    scale: float,
    samples: Samples,
    figures: dict[str, Figure],
    cpu: Samples,
) -> None:
    """Start broker (fresh dir), take S1/S2, run the selected workloads, then S3 for kbroker."""
    try:
        broker.start()
        samples["S1"][broker.name].append(broker.startup_ms)
        time.sleep(1.0)
        samples["S2"][broker.name].append(broker.rss_mib())
        note(f"{broker.name}: started in {broker.startup_ms:.0f} ms, RSS {samples['S2'][broker.name][-1]:.1f} MiB")
        for i, warmup in enumerate(WARMUP):
            run_workload(warmup, broker, LOADGEN_CPUS, 1.0, topic=f"bench-warmup-{i}")
        note(f"{broker.name}: warm-up done (untimed, {len(WARMUP)} loads)")
        for name in selected:
            workload = WORKLOADS[name]
            result = run_workload(workload, broker, LOADGEN_CPUS, scale, topic=f"bench-{name.lower()}")
            shown = []
            for figure in workload.figures:
                figures[figure.name] = figure
                samples[figure.name][broker.name].append(float(result[figure.key]))
                seconds = float(result[f"{figure.phase}_seconds"])
                for side in ("broker", "loadgen"):
                    used = float(result[f"{figure.phase}_{side}_cpu_s"])
                    cpu[figure.name][f"{broker.name} {side}"].append(100 * used / seconds if seconds > 0 else 0.0)
                shown.append(f"{figure.name} {result[figure.key]:,.2f} {figure.unit}")
            note(f"{broker.name}: {name} verified ({int(result['records']):,} records): " + ", ".join(shown))
        if isinstance(broker, KBroker) and "S3" in extras:
            recovery(broker, samples)
    finally:
        broker.cleanup()


def extra_starts(kind: type[Broker], samples: Samples) -> None:
    """More S1 samples: start and stop a broker on an empty data dir (the round's own start is one more)."""
    for _ in range(EXTRA_STARTS):
        time.sleep(SETTLE_SECONDS)
        broker = kind(BROKER_CPUS)
        try:
            broker.start()
            samples["S1"][broker.name].append(broker.startup_ms)
        finally:
            broker.cleanup()


def recovery(broker: KBroker, samples: Samples) -> None:
    """S3: kill -9 the broker, start it again on the same data, read its start-up summary (log_manager_started)."""
    broker.kill()
    broker.log_level = "info"
    before = len(broker.start_summaries())
    broker.start()
    events = broker.start_summaries()[before:]
    if not events:
        raise RuntimeError("S3: the restart after kill -9 logged no log_manager_started summary")
    scanned = int(events[-1]["bytes_recovered"])
    seconds = float(events[-1]["duration_ms"]) / 1000
    if scanned == 0 or seconds <= 0:
        raise RuntimeError("S3: the restart after kill -9 scanned nothing (was any data written?)")
    samples["S3"][broker.name].append(scanned / seconds / 1e6)
    samples["S3 restart"][broker.name].append(broker.startup_ms)
    note(
        f"kbroker: S3 recovery scanned {scanned / 1e6:,.0f} MB in {seconds * 1000:,.0f} ms "
        f"({scanned / seconds / 1e6:,.0f} MB/s), first answer {broker.startup_ms:,.0f} ms after restart"
    )


def summarise(samples: Samples, figures: dict[str, Figure]) -> list[list[str]]:
    """Rows: figure, Kafka median [min-max], kbroker median [min-max], ratio, target."""
    rows = []
    for name, figure in figures.items():
        per = samples.get(name, {})
        cells = [figure.label]
        medians = {}
        for broker in ("kafka", "kbroker"):
            values = per.get(broker, [])
            if values:
                medians[broker] = statistics.median(values)
                cells.append(f"{fmt(medians[broker])} {figure.unit} ({fmt(min(values))}-{fmt(max(values))})")
            else:
                cells.append("-")
        if len(medians) == 2 and medians["kafka"] > 0:
            cells.append(f"{medians['kbroker'] / medians['kafka']:.2f}x")
        else:
            cells.append("-")
        cells.append(figure.target or "-")
        rows.append(cells)
    return rows


def cpu_table(cpu: Samples, figures: dict[str, Figure]) -> str:
    """CPU use during each measured phase (median % of one core): who is the limit."""
    columns = ["kafka broker", "kafka loadgen", "kbroker broker", "kbroker loadgen"]
    where = (
        f"the broker has core {BROKER_CPUS}, the load generator core {LOADGEN_CPUS}"
        if BROKER_CPUS != LOADGEN_CPUS
        else "unpinned: each may use every core"
    )
    lines = [
        f"CPU use while each figure was measured (median, % of one core; {where}; other processes on this"
        " shared machine take the rest):",
        "",
        "| figure | Kafka broker | load generator (vs Kafka) | kbroker | load generator (vs kbroker) |",
        "|---|---|---|---|---|",
    ]
    shown = set()
    for name in figures:
        workload = name.split()[0]  # "W5 p50" and "W5 p99" come from one phase: one row
        if name not in cpu or workload in shown:
            continue
        shown.add(workload)
        cells = [f"{statistics.median(cpu[name][c]):.0f}%" if cpu[name].get(c) else "-" for c in columns]
        label = figures[name].label if workload == name else f"{workload} (its measured phase)"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) if shown else ""  # S4 alone measures no CPU phase: no empty table


def fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def table(rows: list[list[str]]) -> str:
    head = "| figure | Apache Kafka median (min-max) | kbroker median (min-max) | kbroker/Kafka | target |"
    lines = [head, "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def settings_text(args: argparse.Namespace, selected: list[str], extras: list[str], elapsed: float) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"{when}: `scripts/bench/run --rounds {args.rounds} --workloads {args.workloads} --scale {args.scale}"
        f"{' --unpinned' if args.unpinned else ''}{' --kbroker-from checkout' if args.kbroker_from == 'checkout' else ''}`,"
        f" {elapsed / 60:.1f} min. {environment_note()}.",
        (
            f"Brokers pinned to core {BROKER_CPUS}, load generator (franz-go) to core {LOADGEN_CPUS}; order per round:"
            if BROKER_CPUS != LOADGEN_CPUS
            else f"Unpinned: brokers and load generator may each use every core ({BROKER_CPUS}); order per round:"
        )
        + " Apache Kafka, then kbroker, each on a fresh data dir. Every record of every workload was read back and"
        " checked (sequence, offset, size)."
        + (
            " Before the measured workloads each broker gets an untimed warm-up (256 Ki records of 1 KiB with"
            " acks=all, then 3 s of unbatched produce) so the JVM has compiled its hot paths."
            if selected or "CL" in extras
            else ""
        )
        + (" S1 has 3 samples per round (3 starts on an empty data dir, 2 s apart), S2 one." if "S1" in extras else "")
        + (
            " kbroker runs as installed: a wheel of the checkout in its own venv, bytecode compiled by pip"
            " (one untimed start first)."
            if args.kbroker_from == "installed"
            else " kbroker runs from the checkout (editable install) with cached bytecode (one untimed start first)."
        )
        + " Machine load average at the end: "
        + load_average()
        + ".",
        "",
        "Workloads as run:",
        "",
    ]
    for name in selected:
        lines.append(f"- {name}: {WORKLOADS[name].description}")
    if "CL" in extras:
        lines.append(f"- CL: {CL_DESCRIPTION}")
    if "S4" in extras:
        lines.append(f"- S4: {S4_DESCRIPTION}")
    return "\n".join(lines)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def write_doc(text: str, unpinned: bool) -> None:
    begin, end = f"<!-- {SECTIONS[unpinned]}:begin -->", f"<!-- {SECTIONS[unpinned]}:end -->"
    doc = DOC.read_text()
    if begin not in doc or end not in doc:
        raise RuntimeError(f"{DOC} has no {begin} ... {end} section")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    DOC.write_text(f"{head}{begin}\n{text}\n{end}{tail}")


def parse_selection(spec: str) -> tuple[list[str], list[str]]:
    names = [n.strip().upper() for n in spec.split(",") if n.strip()]
    workloads: list[str] = []
    extras = []
    for name in names:
        name = ALIASES.get(name, name)
        if name in WORKLOADS:
            if name not in workloads:
                workloads.append(name)
        elif name in ("S1", "S2", "S3", "S4", "CL"):
            extras.append(name)
        else:
            raise SystemExit(f"unknown workload {name}")
    return [w for w in WORKLOADS if w in workloads], extras


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", default="W1,W2,W3,W4,W5,W6,W7,E1,CL,S1,S2,S3,S4")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply the record counts of W1, W2, W6, the durations of W7, E1, CL and S4's partitions (at most 1)",
    )
    parser.add_argument("--brokers", default="kafka,kbroker", help="which to run (default both)")
    parser.add_argument("--no-docs", action="store_true", help="do not write docs/performance.md")
    parser.add_argument(
        "--unpinned", action="store_true", help="let brokers and load generator use every core (as users run them)"
    )
    parser.add_argument(
        "--kbroker-from",
        choices=("installed", "checkout"),
        default="installed",
        help="run kbroker from a wheel of this checkout installed into its own venv (default, as users run it) "
        "or from the checkout's .venv (editable install)",
    )
    args = parser.parse_args(argv)
    if args.unpinned:
        global BROKER_CPUS, LOADGEN_CPUS
        BROKER_CPUS = LOADGEN_CPUS = f"0-{(os.cpu_count() or 1) - 1}"
    selected, extras = parse_selection(args.workloads)
    build_loadgen()
    if args.kbroker_from == "installed" and "kbroker" in args.brokers.split(","):
        KBroker.installed = install_kbroker()
    prime = KBroker(BROKER_CPUS)  # one untimed start fills kbroker's bytecode cache
    try:
        prime.start()
    finally:
        prime.cleanup()
    started = time.monotonic()
    samples: Samples = defaultdict(lambda: defaultdict(list))
    cpu: Samples = defaultdict(lambda: defaultdict(list))  # figure -> "kafka broker" etc. -> % of one core
    figures: dict[str, Figure] = {}
    scenario_figures: dict[str, Figure] = {}

    def record(figure: Figure, broker: str, value: float) -> None:
        scenario_figures[figure.name] = figure
        samples[figure.name][broker].append(value)

    kinds: dict[str, type[Broker]] = {"kafka": Kafka, "kbroker": KBroker}
    for round_no in range(1, args.rounds + 1):
        for name in args.brokers.split(","):
            note(f"round {round_no}/{args.rounds}: {name}")
            if "S1" in extras:
                extra_starts(kinds[name], samples)
            if selected or {"S1", "S2", "S3"} & set(extras):
                time.sleep(SETTLE_SECONDS)
                one_broker(kinds[name](BROKER_CPUS), selected, extras, args.scale, samples, figures, cpu)
            for extra, scenario in (("CL", cleaner_latency), ("S4", many_partitions)):
                if extra in extras:
                    time.sleep(SETTLE_SECONDS)
                    scenario(kinds[name], BROKER_CPUS, LOADGEN_CPUS, args.scale, record)
    ordered = {f.name: f for f in (S1, S2)}
    ordered.update(figures)
    ordered.update(scenario_figures)
    if "S3" in extras:
        ordered.update({S3.name: S3, S3_RESTART.name: S3_RESTART})
    ordered = {k: v for k, v in ordered.items() if k in samples}
    text = (
        settings_text(args, selected, extras, time.monotonic() - started) + "\n\n" + table(summarise(samples, ordered))
    )
    cpu_text = cpu_table(cpu, figures)
    if cpu_text:
        text += "\n\n" + cpu_text
    print()
    print(text)
    if not args.no_docs:
        write_doc(text, args.unpinned)
        note(f"wrote {DOC}")
    return 0


def side_by_side_options(parser: argparse.ArgumentParser, clients: str) -> None:
    """The options the W12/W13 scripts share: rounds, which brokers, pinning, where kbroker runs from."""
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--brokers", default="kafka,kbroker")
    parser.add_argument("--unpinned", action="store_true", help=f"brokers and {clients} may use every core")
    parser.add_argument("--kbroker-from", choices=("installed", "checkout"), default="installed")


def side_by_side_setup(args: argparse.Namespace) -> tuple[str, str]:
    """Install kbroker's wheel when it runs installed; (the brokers' cores, the clients' cores) for taskset:
    core 0 and core 1, or every core for both with --unpinned."""
    if args.kbroker_from == "installed" and "kbroker" in args.brokers.split(","):
        KBroker.installed = install_kbroker()
    if args.unpinned:
        every = f"0-{(os.cpu_count() or 1) - 1}"
        return every, every
    return "0", "1"


def run(entry: Callable[[], int]) -> NoReturn:
    """A benchmark's entry point: its exit status, or 1 with the reason when a load fails its checks."""
    try:
        sys.exit(entry())
    except RuntimeError as error:
        print(f"BENCHMARK FAILED: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    run(main)
