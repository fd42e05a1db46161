"""Query benchmark: incident queries over the scenario store, whyslow (in-process, the
session `whyslow sql` opens) vs DuckDB over the same Parquet segments, hot and cold."""

from __future__ import annotations

import datetime as dt
import json
import re
import statistics
import sys
from pathlib import Path

from .common import BENCH, Size, Tools, drop_page_cache, log, measure, segments

QUERIES = BENCH / "queries"
PEERS = Path(__file__).resolve().parent / "peers"


def _ts(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00"))


def parameters(scenario: Path) -> dict[str, str]:
    """Values for the queries' {placeholders}, from the scenario's ground truth: the
    thermal incident's node, GPU and window, the preemption's window, the data window."""
    truth = json.loads((scenario / "truth.json").read_text())
    incidents = truth["incidents"]
    on_node = next(i for i in incidents if i.get("node"))
    first = min(_parse(i["start"]) for i in incidents)
    last = max(_parse(i["end"]) for i in incidents)
    near = dt.timedelta(minutes=15)
    pods = sorted(p.name for p in (scenario / "pods").iterdir())
    pod = next((p for p in pods if p.startswith("fleet_")), pods[0]).split("_")[1]
    window = truth["window"]  # {"from": RFC 3339, "to": RFC 3339}
    return {
        "node": on_node["node"],
        "device": on_node["device"] or "0",
        "workload": on_node["workload"],
        "pod": pod,
        "node_from": _ts(_parse(on_node["start"]) - near),
        "node_to": _ts(_parse(on_node["end"]) + near),
        "incident_from": _ts(first),
        "incident_to": _ts(last),
        "incident_from_minus_5m": _ts(first - dt.timedelta(minutes=5)),
        "incident_to_plus_5m": _ts(last + dt.timedelta(minutes=5)),
        "data_from": window["from"],
        "data_to": window["to"],
    }


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def render(text: str, params: dict[str, str]) -> str:
    def value(m: re.Match) -> str:
        if m.group(1) not in params:
            raise KeyError(f"unknown placeholder {{{m.group(1)}}}")
        return params[m.group(1)].replace("'", "''")

    return _PLACEHOLDER.sub(value, text)


def write_queries(params: dict[str, str], work: Path) -> dict[str, list[Path]]:
    """The suite with placeholders filled, one directory per engine. `NAME.sql` is the
    whyslow (DataFusion) text; `NAME.duckdb.sql` replaces it for DuckDB where the dialects
    differ (function names only: the question and the result are the same)."""
    out = {"whyslow": [], "duckdb": []}
    for engine in out:
        (work / "q" / engine).mkdir(parents=True, exist_ok=True)
    for path in sorted(QUERIES.glob("*.sql")):
        if path.name.endswith(".duckdb.sql"):
            continue
        name = path.name.removesuffix(".sql")
        duck = path.with_name(name + ".duckdb.sql")
        for engine, src in (("whyslow", path), ("duckdb", duck if duck.exists() else path)):
            dst = work / "q" / engine / f"{name}.sql"
            dst.write_text(render(src.read_text(), params))
            out[engine].append(dst)
    return out


def _lines(stdout: str) -> tuple[float, dict[str, dict]]:
    rows = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    open_s = next(r["open_s"] for r in rows if "open_s" in r)
    return open_s, {r["query"]: r for r in rows if "query" in r}


def _run_sql_processes(tools: Tools, store: Path, files, warmup: int, repeat: int):
    """Without whyslow-bench: each run is a `whyslow sql -f FILE` process; its time is the
    process wall time minus the median of `SELECT 1` processes (start-up, reading the log,
    registering tables and views). Each run is a new session, so Parquet footers are read
    again every time (from the page cache when hot)."""
    def wall(args) -> tuple[float, str]:
        r = measure([tools.whyslow, "--store", store, "sql", *args, "--format", "json"]).check()
        return r.wall_s, r.stdout

    base = statistics.median(wall(["SELECT 1"])[0] for _ in range(max(3, repeat)))
    per, last = {}, None
    for f in files:
        times, rows = [], 0
        for i in range(warmup + repeat):
            secs, out = wall(["-f", str(f)])
            rows = sum(1 for line in out.splitlines() if line.startswith("{"))
            if i >= warmup:
                times.append(max(secs - base, 0.0))
        per[f.stem] = {"query": f.stem, "times_s": times, "rows": rows}
    last = measure([tools.whyslow, "--store", store, "sql", "-f", str(files[-1]), "--format", "json"])
    return last, base, per


def _run(engine: str, tools: Tools, store: Path, segs: Path, files, warmup: int, repeat: int):
    if engine == "whyslow" and not tools.bench.exists():
        return _run_sql_processes(tools, store, files, warmup, repeat)
    if engine == "whyslow":
        cmd = [tools.bench, "query", "--store", store, "--warmup", str(warmup),
               "--repeat", str(repeat), *files]
    else:
        cmd = [sys.executable, PEERS / "duckdb_query.py", segs, str(warmup), str(repeat), *files]
    run = measure(cmd).check()
    return run, *_lines(run.stdout)


def bench(tools: Tools, size: Size, scenario: Path, store: Path, work: Path) -> dict:
    segs = segments(tools, store)
    seg_file = work / "segments.json"
    seg_file.write_text(json.dumps(segs))
    params = parameters(scenario)
    files = write_queries(params, work)
    result = {
        "timing": "in-process (whyslow-bench query)" if tools.bench.exists() else
                  "whyslow sql processes minus a SELECT 1 baseline (whyslow-bench not built)",
        "params": params,
        "rows": {t: sum(s["rows"] for s in segs[t]) for t in ("events", "metrics")},
        "segments": {t: len(segs[t]) for t in ("events", "metrics")},
        "parquet_bytes": sum(s["bytes"] for t in ("events", "metrics") for s in segs[t]),
        "hot": {},
        "cold": {},
        "cold_note": "",
    }
    for engine in ("whyslow", "duckdb"):
        log(f"queries hot: {engine} (warmup {size.query_warmup}, median of {size.query_repeat})")
        run, open_s, per = _run(engine, tools, store, seg_file, files[engine],
                                size.query_warmup, size.query_repeat)
        result["hot"][engine] = {
            "open_s": open_s,
            "max_rss_mb": run.max_rss_mb,
            "queries": {q: {"s": statistics.median(r["times_s"]), "rows": r["rows"]}
                        for q, r in per.items()},
        }
    if not size.cold:
        result["cold_note"] = f"not measured at size {size.name}"
        return result
    for engine in ("whyslow", "duckdb"):
        result["cold"][engine] = {"queries": {}}
    for i, name in enumerate(f.stem for f in files["whyslow"]):
        for engine in ("whyslow", "duckdb"):
            if not drop_page_cache():
                result["cold"] = {}
                result["cold_note"] = "could not drop the page cache (needs root): not measured"
                log(result["cold_note"])
                return result
            f = files[engine][i]
            log(f"query cold: {engine} {name}")
            run, open_s, per = _run(engine, tools, store, seg_file, [f], 0, 1)
            result["cold"][engine]["queries"][name] = {
                "s": per[name]["times_s"][0],
                "open_s": open_s,
                "rows": per[name]["rows"],
            }
    result["cold_note"] = (
        "page cache dropped (sync; echo 3 > /proc/sys/vm/drop_caches) before each query, "
        "each in a new process: a fresh session/connection"
    )
    return result
