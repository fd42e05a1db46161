"""Ingest benchmark: envelope JSONL -> zstd Parquet, whyslow vs DuckDB vs pyarrow."""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from pathlib import Path

from .common import Run, Size, Tools, best_of, log, measure, parse_ingest_summary, rmtree
from .common import tree_bytes, whyslow_ingest

PEERS = Path(__file__).resolve().parent / "peers"

_EPOCH_TIME = re.compile(rb'^\{"time":(\d+)\.(\d+),', re.M)


def generate(tools: Tools, work: Path, records: int) -> tuple[Path, Path]:
    """The envelope input (ingest_bench's generator: DCGM metrics for 32 nodes x 8 GPUs,
    SDK step times, ~2% events) and its copy with every time as RFC 3339 text."""
    mixed = work / f"envelope-{records}.jsonl"
    uniform = work / f"envelope-{records}-rfc3339.jsonl"
    if not mixed.exists():
        log(f"generating {records} envelope records")
        tmp = mixed.with_suffix(".tmp")
        measure([tools.ingest_bench, "--generate", tmp, str(records)]).check()
        tmp.rename(mixed)
    if not uniform.exists():
        # The generator writes SDK step times with epoch-second times (the envelope allows
        # both); pyarrow's JSON reader refuses a column that is text in one row and a number
        # in another, so the uniform copy gives every peer a file it can read.
        log("writing the RFC 3339-only copy")
        cache: dict[bytes, bytes] = {}

        def text(m: re.Match) -> bytes:
            key = m.group(1)
            if key not in cache:
                t = dt.datetime.fromtimestamp(int(key), dt.timezone.utc)
                cache[key] = t.strftime("%Y-%m-%dT%H:%M:%S").encode()
            return b'{"time":"' + cache[key] + b"." + m.group(2) + b'Z",'

        tmp = uniform.with_suffix(".tmp")
        with open(mixed, "rb") as src, open(tmp, "wb") as dst:
            while chunk := src.readlines(64 << 20):
                dst.write(_EPOCH_TIME.sub(text, b"".join(chunk)))
        tmp.rename(uniform)
    return mixed, uniform


def count_lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as f:
        while block := f.read(16 << 20):
            n += block.count(b"\n")
    return n


def run_whyslow(tools: Tools, work: Path, src: Path, one_core: bool, repeat: int) -> dict:
    store = work / "ingest-store"

    def once() -> Run:
        rmtree(store)
        return whyslow_ingest(tools, store, [src], "envelope", one_core)

    run = best_of(repeat, once)
    s = parse_ingest_summary(run.stdout)
    return {
        "run": run,
        "records": s["records"],
        "rows": s["written"],
        "parquet_bytes": tree_bytes(store, ".parquet"),
        "extra_bytes": tree_bytes(store, ".keys"),
        "inner_s": None,
    }


def run_peer(script: str, src: Path, dst: Path, one_core: bool, repeat: int) -> dict:
    threads = "1" if one_core else "0"

    def once() -> Run:
        dst.unlink(missing_ok=True)
        cmd = [sys.executable, PEERS / script, threads, src, dst]
        return measure(cmd, pin_one_core=one_core)

    run = best_of(repeat, once)
    lines = run.stdout.strip().splitlines()
    info = json.loads(lines[-1]) if lines else {}
    if run.returncode != 0:
        msg = info.get("error") or run.stderr.strip().splitlines()[-1:]
        return {"run": run, "error": str(msg)}
    return {
        "run": run,
        "records": None,
        "rows": info["rows"],
        "parquet_bytes": dst.stat().st_size,
        "extra_bytes": 0,
        "inner_s": info["inner_s"],
    }


def bench(tools: Tools, size: Size, work: Path) -> dict:
    """Runs every engine on both files, pinned to one core and on all cores."""
    mixed, uniform = generate(tools, work, size.envelope_records)
    results = {"records": size.envelope_records, "files": {}, "big": None}
    for label, src in (("mixed", mixed), ("rfc3339", uniform)):
        records = count_lines(src)
        # Read once so every engine starts with the input in the page cache.
        count_lines(src)
        per_file = {"path": str(src), "bytes": src.stat().st_size, "records": records, "runs": []}
        for one_core in (True, False):
            mode = "1 core" if one_core else "all cores"
            for engine, fn in (
                ("whyslow", lambda: run_whyslow(tools, work, src, one_core, size.ingest_repeat)),
                (
                    "duckdb",
                    lambda: run_peer(
                        "duckdb_ingest.py", src, work / "duckdb.parquet", one_core,
                        size.ingest_repeat,
                    ),
                ),
                (
                    "pyarrow",
                    lambda: run_peer(
                        "pyarrow_ingest.py", src, work / "pyarrow.parquet", one_core,
                        size.ingest_repeat,
                    ),
                ),
            ):
                log(f"ingest {label} file, {mode}: {engine}")
                r = fn()
                r.update(engine=engine, mode=mode)
                if r.get("records") is None and "error" not in r:
                    r["records"] = records
                if "error" in r:
                    log(f"  {engine} failed: {r['error'][:200]}")
                else:
                    log(f"  {records / r['run'].wall_s:,.0f} records/s, "
                        f"peak RSS {r['run'].max_rss_mb:.0f} MB")
                per_file["runs"].append(r)
        results["files"][label] = per_file
    for d in ("duckdb.parquet", "pyarrow.parquet"):
        (work / d).unlink(missing_ok=True)
    rmtree(work / "ingest-store")

    if size.envelope_big_records:
        big, _ = generate_big(tools, work, size.envelope_big_records)
        log(f"ingest memory check: whyslow on {size.envelope_big_records} records")
        r = run_whyslow(tools, work, big, False, 1)
        r["bytes"] = big.stat().st_size
        results["big"] = r
        rmtree(work / "ingest-store")
    return results


def generate_big(tools: Tools, work: Path, records: int) -> tuple[Path, None]:
    path = work / f"envelope-{records}.jsonl"
    if not path.exists():
        log(f"generating {records} envelope records for the memory check")
        tmp = path.with_suffix(".tmp")
        measure([tools.ingest_bench, "--generate", tmp, str(records)]).check()
        tmp.rename(path)
    return path, None
