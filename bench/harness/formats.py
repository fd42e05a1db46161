"""Per-format ingest for whyslow alone: each real format of the scenario into a fresh store."""

from __future__ import annotations

from pathlib import Path

from .common import Size, Tools, best_of, log, parse_ingest_summary, rmtree, whyslow_ingest
from .scenario import FORMATS, path_bytes, uncompressed_bytes


def bench(tools: Tools, size: Size, scenario: Path, work: Path) -> list[dict]:
    store = work / "format-store"
    out = []
    for fmt, names in FORMATS.items():
        paths = [scenario / n for n in names if (scenario / n).exists()]
        on_disk = sum(path_bytes(p) for p in paths)
        plain = sum(uncompressed_bytes(p) for p in paths)
        for one_core in (True, False):
            mode = "1 core" if one_core else "all cores"
            log(f"format {fmt}, {mode}")

            def once():
                rmtree(store)
                return whyslow_ingest(tools, store, paths, fmt, one_core)

            run = best_of(size.ingest_repeat, once)
            s = parse_ingest_summary(run.stdout)
            out.append(
                {
                    "format": fmt,
                    "mode": mode,
                    "inputs": [p.name for p in paths],
                    "on_disk_bytes": on_disk,
                    "plain_bytes": plain,
                    "run": run,
                    **s,
                }
            )
            log(f"  {s['records'] / run.wall_s:,.0f} records/s, {plain / 1e6 / run.wall_s:.1f} MB/s")
    rmtree(store)
    return out
