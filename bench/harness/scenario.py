"""The large generated scenario (whyslow-fixtures) the per-format, query and report
benchmarks read, and the store it is ingested into."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .common import Size, Tools, log, measure, parse_ingest_summary, rmtree, whyslow_ingest

# Thermal throttling on one rank, later a Kueue preemption of the same job, in a fleet of
# clean training jobs: every incident query has something to find.
SCENARIO = "combo-preemption-thermal"

# The files of each real format in a scenario directory (fixtures/scenarios/README.md).
FORMATS = {
    "k8s": ["k8s-events.jsonl", "kueue-workloads.jsonl", "inventory.json"],
    "prometheus": ["dcgm"],
    "kmsg": ["kernel"],
    "container-log": ["pods"],
    "envelope": ["sdk.jsonl.gz"],
}


def generate(tools: Tools, size: Size, work: Path) -> Path:
    """Generates the scenario once per size (kept for later runs)."""
    out = work / f"scenario-{size.nodes}n-{size.hours}h"
    stamp = out / ".bench-complete"
    if stamp.exists():
        return out
    rmtree(out)
    log(f"generating {SCENARIO} with {size.nodes} nodes x {size.hours} h")
    run = measure(
        [
            tools.fixtures, "generate", "--scenario", SCENARIO, "--size", "large",
            "--nodes", str(size.nodes), "--hours", str(size.hours), "--out", out,
        ]
    ).check()
    log("  " + (run.stdout.strip().splitlines() or [""])[-1])
    stamp.write_text(run.stdout)
    return out


def ingest_all(tools: Tools, scenario: Path, work: Path, fresh: bool) -> tuple[Path, dict]:
    """Ingests the whole scenario (format auto) into the query store, once; returns the
    store and the timed run (None when the store was already there)."""
    store = work / f"store-{scenario.name}"
    stamp = store / ".bench-complete"
    if stamp.exists() and not fresh:
        return store, json.loads(stamp.read_text())
    rmtree(store)
    log(f"ingesting {scenario.name} into the query store")
    paths = [scenario / p for f in FORMATS.values() for p in f]
    run = whyslow_ingest(tools, store, paths, "auto", pin=False)
    info = {
        "wall_s": run.wall_s,
        "cpu_s": run.cpu_s,
        "max_rss_mb": run.max_rss_mb,
        "input_bytes": sum(path_bytes(p) for p in paths),
        **parse_ingest_summary(run.stdout),
    }
    stamp.write_text(json.dumps(info))
    return store, info


def path_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum((Path(d) / n).stat().st_size for d, _, ns in os.walk(path) for n in ns)


def uncompressed_bytes(path: Path) -> int:
    """Bytes after gunzip of every file under `path` (plain files count as they are)."""
    import gzip

    files = [path] if path.is_file() else [Path(d) / n for d, _, ns in os.walk(path) for n in ns]
    total = 0
    for f in files:
        with open(f, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        if not gz:
            total += f.stat().st_size
            continue
        with gzip.open(f, "rb") as fh:
            while block := fh.read(16 << 20):
                total += len(block)
    return total
