"""End-to-end `whyslow report` over the scenario store."""

from __future__ import annotations

import json
from pathlib import Path

from .common import Tools, log, measure


def bench(tools: Tools, store: Path, work: Path, scenario: Path) -> dict:
    out = work / "report.json"
    runs = []
    for attempt in ("first", "second"):
        # The first run over the whole store also persists the derived tables (slowdowns,
        # causes); the second shows the cost with them already there.
        log(f"whyslow report ({attempt} run)")
        out.unlink(missing_ok=True)
        run = measure([tools.whyslow, "--store", store, "report", "--format", "json", "-o", out])
        entry = {"attempt": attempt, "run": run, "ok": run.returncode == 0}
        if run.returncode != 0:
            entry["error"] = (run.stderr.strip().splitlines() or ["(no message)"])[-1]
            log(f"  failed: {entry['error']}")
        else:
            entry.update(summarize(out, scenario))
            log(f"  {run.wall_s:.2f} s, peak RSS {run.max_rss_mb:.0f} MB")
        runs.append(entry)
    return {"runs": runs}


def summarize(report: Path, scenario: Path) -> dict:
    """How many slowdowns the report holds and which causes it ranks first, beside the
    scenario's ground truth (a sanity check, not a quality score)."""
    try:
        data = json.loads(report.read_text())
        truth = json.loads((scenario / "truth.json").read_text())
    except (OSError, ValueError) as e:
        return {"summary": f"unreadable report: {e}"}
    slowdowns = data.get("slowdowns", []) if isinstance(data, dict) else []
    top = []
    for s in slowdowns:
        causes = s.get("causes") or []
        if causes and isinstance(causes[0], dict):
            top.append(causes[0].get("cause"))
    expected = sorted(i["cause"] for i in truth.get("incidents", []))
    return {
        "slowdowns": len(slowdowns),
        "top_causes": sorted({c for c in top if c}),
        "expected_causes": expected,
    }
