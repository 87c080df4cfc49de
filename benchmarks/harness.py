"""A small side-by-side benchmark harness.

Several named variants run in ONE process, interleaved: each repetition runs every variant
once, in an order rotated by one per repetition, so drift on a shared, noisy machine hits
all variants alike. Ratios against the baseline are taken per repetition (paired), then
the median is reported. CPU time is measured for this process (``time.process_time``, all
threads) and, optionally, for a server process (``/proc/<pid>/stat`` utime+stime; Linux,
coarse: one clock tick, usually 10 ms)::

    from benchmarks.harness import Variant, run_cli

    def ours(n: int) -> int:          # do about n operations, return how many were done
        ...                           # (or return the per-operation latencies, in seconds,
                                      #  to get p50/p99 columns)

    run_cli([Variant("ours", ours), Variant("theirs", theirs, server_pid=pid)],
            baseline="theirs", default_n=10_000, title="what is measured")

Command line of every benchmark built on it: ``--reps R`` (default 5), ``--n N``
(operations per variant per repetition), ``--json`` (machine-readable output),
``--only NAME`` (repeatable; the baseline always runs).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

__all__ = [
    "Result",
    "Sample",
    "Variant",
    "measure",
    "render",
    "run_cli",
    "server_cpu_seconds",
    "summarize",
]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Variant:
    """One contender.

    Attributes:
        name: Label in the table (short; also what ``--only`` matches).
        run: Does about ``n`` operations; returns the exact count done (``None``: ``n``)
            or the latency of each operation in seconds (adds p50/p99 columns).
        server_pid: A server process whose CPU time is charged to this variant.
        baseline: Compare this variant with that one instead of the run's baseline
            (for several pairs in one table, e.g. per chunk size).
    """

    name: str
    run: Callable[[int], int | Sequence[float] | None]
    server_pid: int | None = None
    baseline: str | None = None


@dataclass
class Sample:
    """One timed run of one variant, in seconds (``None``: not measured)."""

    rep: int
    ops: int
    wall: float
    cpu: float
    server_cpu: float | None
    p50: float | None = None
    p99: float | None = None


@dataclass
class Result:
    """All samples of one variant, and the variant its ratios are taken against."""

    name: str
    base: str
    samples: list[Sample] = field(default_factory=list)


def server_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (Linux ``/proc``), at tick resolution."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        # The command name (field 2) may contain spaces: split after its closing paren.
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14, 15)


def _time_once(variant: Variant, n: int, rep: int) -> Sample:
    gc.collect()
    server0 = server_cpu_seconds(variant.server_pid) if variant.server_pid else None
    cpu0, wall0 = time.process_time(), time.perf_counter()
    done = variant.run(n)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    server = None
    if variant.server_pid and server0 is not None:
        server = server_cpu_seconds(variant.server_pid) - server0
    if done is None or isinstance(done, int):
        return Sample(rep, n if done is None else done, wall, cpu, server)
    lat = sorted(done)
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    return Sample(rep, len(lat), wall, cpu, server, lat[len(lat) // 2], p99)


def measure(
    variants: Sequence[Variant], *, n: int, reps: int, baseline: str, warmup: bool = True
) -> list[Result]:
    """Run every variant ``reps`` times, interleaved in rotated order; return all samples."""
    names = {v.name for v in variants}
    if warmup:  # import caches, JIT-free but allocator and page warm-up, lazy setup
        for variant in variants:
            variant.run(max(1, n // 10))
    results = [Result(v.name, v.baseline if v.baseline in names else baseline) for v in variants]
    for rep in range(reps):
        order = [(rep + i) % len(variants) for i in range(len(variants))]
        for index in order:
            results[index].samples.append(_time_once(variants[index], n, rep))
    return results


def _summary(result: Result, base: Result) -> dict[str, float | None]:
    rate = [s.ops / s.wall for s in result.samples]
    cpu_us = [s.cpu / s.ops * 1e6 for s in result.samples]
    base_by_rep = {s.rep: s for s in base.samples}
    paired_rate, paired_cpu = [], []
    for s in result.samples:
        b = base_by_rep[s.rep]
        paired_rate.append((s.ops / s.wall) / (b.ops / b.wall))
        if b.cpu > 0:
            paired_cpu.append((s.cpu / s.ops) / (b.cpu / b.ops))
    server = [s.server_cpu / s.ops * 1e6 for s in result.samples if s.server_cpu is not None]
    p50 = [s.p50 * 1e3 for s in result.samples if s.p50 is not None]
    p99 = [s.p99 * 1e3 for s in result.samples if s.p99 is not None]
    return {
        "ops_per_s": statistics.median(rate),
        "ops_per_s_min": min(rate),
        "ops_per_s_max": max(rate),
        "cpu_us_per_op": statistics.median(cpu_us),
        "server_cpu_us_per_op": statistics.median(server) if server else None,
        "p50_ms": statistics.median(p50) if p50 else None,
        "p99_ms": statistics.median(p99) if p99 else None,
        "x_rate": statistics.median(paired_rate),
        "x_cpu": statistics.median(paired_cpu) if paired_cpu else None,
    }


def summarize(results: Sequence[Result]) -> list[dict[str, float | str | None]]:
    """Per variant: name, base and the medians (``x_*``: paired ratios to ``base``)."""
    by_name = {r.name: r for r in results}
    return [{"name": r.name, "base": r.base, **_summary(r, by_name[r.base])} for r in results]


def render(results: Sequence[Result], title: str = "") -> str:
    """Format medians as a text table (rates: higher is better; CPU: lower is better)."""
    summaries = summarize(results)
    columns = [  # (header, key, format); latency/server columns only when measured
        ("ops/s", "ops_per_s", ",.0f"),
        ("min", "ops_per_s_min", ",.0f"),
        ("max", "ops_per_s_max", ",.0f"),
        ("p50 ms", "p50_ms", ".3g"),
        ("p99 ms", "p99_ms", ".3g"),
        ("CPU µs/op", "cpu_us_per_op", ".2f"),
        ("server µs/op", "server_cpu_us_per_op", ".3g"),
        ("rate x base", "x_rate", ".2f"),
        ("CPU x base", "x_cpu", ".2f"),
    ]
    columns = [c for c in columns if any(s[c[1]] is not None for s in summaries)]
    rows = [["variant", *(c[0] for c in columns), "base"]]
    for s in summaries:
        cells = ["-" if s[key] is None else format(s[key], spec) for _, key, spec in columns]
        rows.append([str(s["name"]), *cells, str(s["base"])])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    rows.insert(1, ["-" * w for w in widths])
    lines = [title] if title else []
    for row in rows:
        cells = [c.rjust(w) for c, w in zip(row, widths, strict=True)]
        cells[0], cells[-1] = row[0].ljust(widths[0]), row[-1]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def run_cli(
    variants: Sequence[Variant],
    *,
    baseline: str,
    default_n: int,
    default_reps: int = 5,
    title: str = "",
    argv: Sequence[str] | None = None,
) -> list[Result]:
    """Parse ``--reps/--n/--json/--only``, measure, print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=title or None)
    parser.add_argument("--reps", type=int, default=default_reps, help="repetitions")
    parser.add_argument("--n", type=int, default=default_n, help="operations per run")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--only", action="append", default=[], help="variant to run")
    args = parser.parse_args(argv)
    names = {v.name for v in variants}
    if baseline not in names or not set(args.only) <= names:
        parser.error(f"variants are {sorted(names)} (baseline {baseline!r})")
    wanted = {*args.only, baseline} | {v.baseline for v in variants if v.name in args.only}
    chosen = [v for v in variants if not args.only or v.name in wanted]
    results = measure(chosen, n=args.n, reps=args.reps, baseline=baseline)
    if args.json:
        meta = {
            "title": title,
            "n": args.n,
            "reps": args.reps,
            "baseline": baseline,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        summaries = summarize(results)
        variants_out = [
            {**summary, "samples": [asdict(x) for x in r.samples]}
            for r, summary in zip(results, summaries, strict=True)
        ]
        out = {"meta": meta, "variants": variants_out}
        json.dump(out, sys.stdout, indent=2)
        print()
    else:
        heading = f"{title}  (n={args.n}, reps={args.reps}; medians, ratios paired per rep)"
        print(render(results, heading))
    return results
