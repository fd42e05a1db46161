"""Turns the measurements into the Markdown of bench/results/ (and the terminal)."""

from __future__ import annotations

import math
import sys
import platform
from pathlib import Path

# The targets of issue 7.
TARGET_PER_CORE = 1_000_000  # envelope events/s on one core
TARGET_VS_DUCKDB = 2.0  # whyslow's speed over DuckDB's, one thread, same file
TARGET_QUERY_GEOMEAN = 1.0  # whyslow time / DuckDB time, at most
TARGET_REPORT_S = 5.0  # 24 h x 1000 nodes
TARGET_RSS_MB = 1024.0


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def _n(x: float) -> str:
    return f"{x:,.0f}"


def _ms(secs: float) -> str:
    return f"{secs * 1e3:.1f}" if secs > 0 else "below noise"


def _ratio(r: float | None) -> str:
    return "–" if r is None else f"{r:.2f}"


def _geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB RAM, Linux {platform.release()}"


def ingest_section(res: dict, verdicts: list[str]) -> list[str]:
    out = ["## Ingest: envelope JSONL → zstd Parquet", ""]
    out += [
        "Input: `ingest_bench --generate` (DCGM metrics of 32 nodes × 8 GPUs every second, "
        "SDK step times, ~2% events). `mixed` is the file as generated (SDK step times carry "
        "epoch-second numbers, the rest RFC 3339 text); `rfc3339` is the same records with every "
        "time as text. records/s = records ÷ process wall time (whyslow) or ÷ time inside the "
        "peer script (connect → file written; Python start and import left out, in the peers' "
        "favour). 1 core = `taskset -c 0` plus DuckDB `SET threads=1` / pyarrow "
        "`set_cpu_count(1)`, `set_io_thread_count(1)`. Bytes/record: Parquet bytes on disk ÷ "
        "records (whyslow: the events and metrics tables; its dedupe key files in brackets). "
        "Best of the repeats; the input is in the page cache.",
        "",
    ]
    for label, f in res["files"].items():
        out.append(f"### `{label}` file: {_n(f['records'])} records, {f['bytes'] / 1e6:.0f} MB")
        out.append("")
        rows = []
        for r in f["runs"]:
            if "error" in r:
                rows.append([r["engine"], r["mode"], "fails: " + r["error"][:90], "", "", "", "", ""])
                continue
            secs = r["inner_s"] or r["run"].wall_s
            extra = f" (+{r['extra_bytes'] / r['records']:.1f})" if r["extra_bytes"] else ""
            rows.append([
                r["engine"], r["mode"], f"{secs:.2f}", _n(r["records"] / secs),
                _n(r["records"] / max(r["run"].cpu_s, 1e-9)), f"{r['run'].max_rss_mb:.0f}",
                f"{r['parquet_bytes'] / r['records']:.1f}{extra}", _n(r["rows"]),
            ])
        out += _table(
            ["engine", "threads", "seconds", "records/s", "records/CPU-s", "peak RSS MB",
             "bytes/record", "rows out"],
            rows,
        )
        out.append("")
        ratios = []
        for mode in ("1 core", "all cores"):
            w = next((r for r in f["runs"] if r["engine"] == "whyslow" and r["mode"] == mode), None)
            for peer in ("duckdb", "pyarrow"):
                p = next((r for r in f["runs"] if r["engine"] == peer and r["mode"] == mode), None)
                if w and p and "error" not in p and "error" not in w:
                    ratio = (p["inner_s"] or p["run"].wall_s) / w["run"].wall_s
                    ratios.append(f"{mode}: whyslow is {ratio:.2f}× {peer}'s speed")
        out += ["Ratios: " + "; ".join(ratios) + ".", ""]
    mixed = res["files"].get("mixed")
    if mixed:
        w1 = next(r for r in mixed["runs"] if r["engine"] == "whyslow" and r["mode"] == "1 core")
        d1 = next(r for r in mixed["runs"] if r["engine"] == "duckdb" and r["mode"] == "1 core")
        rate = w1["records"] / w1["run"].wall_s
        verdicts.append(
            f"ingest ≥ {_n(TARGET_PER_CORE)} events/s per core: {_n(rate)} "
            f"({'met' if rate >= TARGET_PER_CORE else f'{rate / TARGET_PER_CORE:.2f}× of target'})"
        )
        if "error" not in d1:
            ratio = (d1["inner_s"] or d1["run"].wall_s) / w1["run"].wall_s
            verdicts.append(
                f"ingest ≥ {TARGET_VS_DUCKDB:.0f}× DuckDB single-threaded (mixed file): {ratio:.2f}× "
                f"({'met' if ratio >= TARGET_VS_DUCKDB else 'not met'})"
            )
    rss = [r["run"].max_rss_mb for f in res["files"].values() for r in f["runs"]
           if r["engine"] == "whyslow"]
    big = res.get("big")
    if big:
        out.append(
            f"Memory check, whyslow alone (all cores): {_n(big['records'])} records "
            f"({big['bytes'] / 1e9:.1f} GB) in {big['run'].wall_s:.1f} s = "
            f"{_n(big['records'] / big['run'].wall_s)} records/s, peak RSS "
            f"{big['run'].max_rss_mb:.0f} MB, {big['parquet_bytes'] / big['records']:.1f} "
            "Parquet bytes/record."
        )
        out.append("")
        rss.append(big["run"].max_rss_mb)
    res["whyslow_rss_mb"] = max(rss)
    return out


def rss_verdict(sections: dict, verdicts: list[str]) -> None:
    """Peak RSS of every whyslow ingest run: envelope, each real format, the scenario."""
    peaks = {}
    if "ingest" in sections:
        peaks["envelope"] = sections["ingest"]["whyslow_rss_mb"]
    for r in sections.get("formats", []):
        peaks[r["format"]] = max(peaks.get(r["format"], 0.0), r["run"].max_rss_mb)
    if "store" in sections:
        peaks["whole scenario"] = sections["store"]["max_rss_mb"]
    if not peaks:
        return
    worst = max(peaks.values())
    listing = ", ".join(f"{k} {v:.0f} MB" for k, v in peaks.items())
    verdicts.append(
        f"ingest peak RSS < {TARGET_RSS_MB:.0f} MiB: {listing} "
        f"({'met' if worst < TARGET_RSS_MB else 'not met'})"
    )


def formats_section(res: list[dict], scenario: str) -> list[str]:
    out = ["## Ingest per real format (whyslow alone)", ""]
    out.append(
        f"Inputs: the files of each format in the generated scenario `{scenario}`, each "
        "format into a fresh store with `--format` given. MB/s counts uncompressed input bytes "
        "(DCGM scrapes and the SDK file are gzip on disk: on-disk MB in brackets). "
        "records = what the format calls a record (a line, a sample, an object); rows = events + "
        "metrics written."
    )
    out.append("")
    rows = []
    for r in res:
        secs = r["run"].wall_s
        rows.append([
            r["format"], r["mode"], ", ".join(r["inputs"]),
            f"{r['plain_bytes'] / 1e6:.1f} ({r['on_disk_bytes'] / 1e6:.1f})", _n(r["records"]),
            _n(r["written"]), f"{secs:.2f}", _n(r["records"] / secs), _n(r["written"] / secs),
            f"{r['plain_bytes'] / 1e6 / secs:.1f}", f"{r['run'].max_rss_mb:.0f}",
        ])
    out += _table(
        ["format", "threads", "inputs", "MB", "records", "rows", "seconds", "records/s",
         "rows/s", "MB/s", "peak RSS MB"],
        rows,
    )
    return out + [""]


def query_section(res: dict, store_info: dict, verdicts: list[str]) -> list[str]:
    out = ["## Queries: whyslow vs DuckDB over the same Parquet files", ""]
    out.append(
        f"Store: {_n(res['rows']['metrics'])} metric rows + {_n(res['rows']['events'])} event "
        f"rows in {res['segments']['metrics']} + {res['segments']['events']} segments, "
        f"{res['parquet_bytes'] / 1e6:.0f} MB of Parquet (ingested from the scenario in "
        f"{store_info['wall_s']:.1f} s = {_n(store_info['records'] / store_info['wall_s'])} "
        f"records/s, peak RSS {store_info['max_rss_mb']:.0f} MB). whyslow timing: "
        f"{res.get('timing', '?')}; in-process means the session `whyslow sql` opens, timing "
        "plan + execute + collect to Arrow (no process start, no printing). DuckDB: views over exactly the segment "
        "files of whyslow's log (`read_parquet([...])`), timed execute + fetch to Arrow. Both on "
        "all cores. Hot: median of the repeats after a warm-up. Ratio = whyslow time ÷ DuckDB "
        "time (below 1: whyslow faster)."
    )
    out.append("")
    hot_w, hot_d = res["hot"]["whyslow"]["queries"], res["hot"]["duckdb"]["queries"]
    cold = res.get("cold") or {}
    rows, hot_ratios, cold_ratios, mismatches = [], [], [], []
    for q in hot_w:
        w, d = hot_w[q], hot_d.get(q)
        if d is None:
            continue
        # With the SELECT 1 fallback a query can take less than the baseline's noise: no
        # ratio then (left out of the geometric mean).
        ratio = w["s"] / d["s"] if w["s"] > 0 else None
        if ratio is not None:
            hot_ratios.append(ratio)
        row = [q, _n(w["rows"]), _ms(w["s"]), f"{d['s'] * 1e3:.1f}", _ratio(ratio)]
        if w["rows"] != d["rows"]:
            mismatches.append(f"{q} ({w['rows']} vs {d['rows']} rows)")
        if cold:
            cw, cd = cold["whyslow"]["queries"][q], cold["duckdb"]["queries"][q]
            cratio = cw["s"] / cd["s"] if cw["s"] > 0 else None
            if cratio is not None:
                cold_ratios.append(cratio)
            row += [_ms(cw["s"]), f"{cd['s'] * 1e3:.1f}", _ratio(cratio)]
        rows.append(row)
    header = ["query", "rows", "whyslow hot ms", "DuckDB hot ms", "ratio hot"]
    if cold:
        header += ["whyslow cold ms", "DuckDB cold ms", "ratio cold"]
    gm_hot = _geomean(hot_ratios)
    gm_row = ["**geometric mean**", "", "", "", f"**{gm_hot:.2f}**"]
    if cold:
        gm_row += ["", "", f"**{_geomean(cold_ratios):.2f}**"]
    out += _table(header, rows + [gm_row])
    out.append("")
    out.append(
        f"Session setup (not in the times above): whyslow {res['hot']['whyslow']['open_s'] * 1e3:.0f} ms "
        f"(reading the log, registering tables and views; with the SELECT 1 fallback: that "
        f"process's whole wall time), DuckDB "
        f"{res['hot']['duckdb']['open_s'] * 1e3:.0f} ms (creating the views). Peak RSS over the hot "
        f"suite: whyslow {res['hot']['whyslow']['max_rss_mb']:.0f} MB, DuckDB (with Python) "
        f"{res['hot']['duckdb']['max_rss_mb']:.0f} MB. Cold: {res['cold_note']}."
    )
    if mismatches:
        out.append("")
        out.append("Row counts differ (check the query or the engines): " + ", ".join(mismatches) + ".")
    out.append("")
    verdicts.append(
        f"query geometric mean ≤ {TARGET_QUERY_GEOMEAN:.1f}× DuckDB: hot {gm_hot:.2f}×"
        + (f", cold {_geomean(cold_ratios):.2f}×" if cold else "")
        + f" ({'met' if gm_hot <= TARGET_QUERY_GEOMEAN else 'not met'} hot)"
    )
    return out


def report_section(res: dict, size, store_info: dict, verdicts: list[str]) -> list[str]:
    out = ["## Report: end-to-end `whyslow report --format json`", ""]
    out.append(
        f"Over the whole query store ({size.nodes} nodes × {size.hours} h, "
        f"{_n(store_info['written'])} rows); process wall time including start-up."
    )
    out.append("")
    rows = []
    for r in res["runs"]:
        if not r["ok"]:
            rows.append([r["attempt"], "failed: " + r["error"][:120], "", ""])
        else:
            found = f"{r.get('slowdowns', '?')} slowdowns; top causes {r.get('top_causes')}; " \
                    f"truth {r.get('expected_causes')}"
            rows.append([r["attempt"], f"{r['run'].wall_s:.2f}", f"{r['run'].max_rss_mb:.0f}", found])
    out += _table(["run", "seconds", "peak RSS MB", "report"], rows)
    out.append("")
    ok = [r for r in res["runs"] if r["ok"]]
    if ok:
        best = min(r["run"].wall_s for r in ok)
        scale = "" if (size.nodes, size.hours) == (1000, 24) else \
            f" at {size.nodes} nodes × {size.hours} h (target is for 1000 × 24)"
        verdicts.append(
            f"report < {TARGET_REPORT_S:.0f} s: {best:.2f} s{scale} "
            f"({'met' if best < TARGET_REPORT_S else 'not met'})"
        )
    else:
        verdicts.append("report: did not run (see the report section)")
    return out


KAFKA = """## Kafka

Not run by this harness (it needs a broker): `ingest/examples/stream_bench.rs` (whyslow
stream vs a bare rdkafka consumer on the same topic) and `bench/src/bin/stream_latency.rs`
(evidence arrival to published incident, per incident). Their figures and commands are in
`bench/results/2026-11-30-stream.md`.
"""


def render(size, versions: dict, sections: dict, scenario: str, when: str) -> str:
    verdicts: list[str] = []
    body: list[str] = []
    if "ingest" in sections:
        body += ingest_section(sections["ingest"], verdicts)
    if "formats" in sections:
        body += formats_section(sections["formats"], scenario)
    if "query" in sections:
        body += query_section(sections["query"], sections["store"], verdicts)
    if "report" in sections:
        body += report_section(sections["report"], size, sections["store"], verdicts)
    rss_verdict(sections, verdicts)
    head = [
        f"# whyslow benchmarks, size `{size.name}` ({when})",
        "",
        f"Machine: {machine()}. Builds: {versions['whyslow']}; DuckDB {versions['duckdb']}, "
        f"pyarrow {versions['pyarrow']} (PyPI). Load average (1 min): {versions.get('load', '?')}. "
        f"Command: `bench/run {' '.join(sys.argv[1:])}`.",
        "",
        "## Targets",
        "",
    ] + [f"- {v}" for v in verdicts] + [""]
    return "\n".join(head + body + [KAFKA])
