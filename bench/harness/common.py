"""Shared pieces of the benchmark harness: sizes, binaries, peers, measured processes."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent


@dataclasses.dataclass(frozen=True)
class Size:
    """How much data one run of the harness generates and how often it repeats."""

    name: str
    envelope_records: int  # the peer-comparison JSONL
    envelope_big_records: int  # whyslow alone, to show ingest memory stays flat (0: skip)
    nodes: int  # the large scenario's fleet
    hours: int
    ingest_repeat: int  # best of N for each ingest run
    query_warmup: int
    query_repeat: int  # hot: median of N
    cold: bool  # drop the page cache before each cold query


SIZES = {
    "tiny": Size("tiny", 50_000, 0, 8, 1, 1, 0, 1, False),
    "small": Size("small", 500_000, 0, 50, 6, 2, 1, 3, True),
    "medium": Size("medium", 2_000_000, 8_000_000, 200, 24, 1, 1, 3, True),
    "full": Size("full", 2_000_000, 20_000_000, 1000, 24, 1, 1, 3, True),
}


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Tools:
    """The binaries the harness runs, built on demand."""

    def __init__(self, profile: str, build: bool | None):
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        self.profile = profile
        self.dir = target / profile
        self.whyslow = self.dir / "whyslow"
        self.bench = self.dir / "whyslow-bench"
        self.fixtures = self.dir / "whyslow-fixtures"
        self.ingest_bench = self.dir / "examples" / "ingest_bench"
        self._build(force=build)

    def _cargo(self, *args: str) -> None:
        profile = [] if self.profile == "debug" else ["--profile", self.profile]
        cmd = ["cargo", "build", *profile, *args]
        log("building: " + " ".join(cmd))
        subprocess.run(cmd, cwd=REPO, check=True)

    def _build(self, force: bool | None) -> None:
        """force True: always run cargo; None: never (a missing whyslow-bench falls back to
        timing `whyslow sql`); False: build what is missing."""
        if force is None:
            missing = [p for p in (self.whyslow, self.fixtures, self.ingest_bench) if not p.exists()]
            if missing:
                raise SystemExit(f"--no-build, and missing: {', '.join(map(str, missing))}")
            return
        # whyslow and whyslow-bench in one invocation: the same feature set as whyslow alone,
        # so the bench crate adds one small compile and link, not a second DataFusion build.
        if force or not all(p.exists() for p in (self.whyslow, self.bench, self.fixtures)):
            self._cargo("-p", "whyslow", "-p", "whyslow-bench", "-p", "whyslow-fixtures")
        if force or not self.ingest_bench.exists():
            self._cargo("-p", "whyslow-ingest", "--example", "ingest_bench")

    def describe(self) -> str:
        out = subprocess.run([str(self.whyslow), "--version"], capture_output=True, text=True)
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        )
        return f"{out.stdout.strip()} ({self.profile}, commit {rev.stdout.strip() or '?'})"


def ensure_peers() -> dict[str, str]:
    """Imports duckdb and pyarrow, installing them from PyPI with pip when missing."""
    versions = {}
    for module in ("duckdb", "pyarrow"):
        try:
            versions[module] = importlib.import_module(module).__version__
        except ImportError:
            log(f"installing {module} from PyPI")
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", module], check=True)
            importlib.invalidate_caches()
            versions[module] = importlib.import_module(module).__version__
    return versions


@dataclasses.dataclass
class Run:
    """One measured process: wall time, CPU time, peak RSS, output."""

    cmd: list[str]
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_mb: float
    returncode: int
    stdout: str
    stderr: str

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s

    def check(self) -> "Run":
        if self.returncode != 0:
            raise RuntimeError(
                f"{' '.join(self.cmd)} exited {self.returncode}: {self.stderr.strip()[-2000:]}"
            )
        return self


def measure(cmd: list[str], pin_one_core: bool = False, env: dict | None = None) -> Run:
    """Runs `cmd` to completion and measures it with wait4 (what /usr/bin/time uses):
    wall clock, user/sys CPU and peak RSS of the process. `pin_one_core` runs it under
    `taskset -c 0` so all its threads share one core."""
    full = (["taskset", "-c", "0"] if pin_one_core else []) + [str(c) for c in cmd]
    out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"whyslow-bench-{os.getpid()}.out"
    err_path = out_path.with_suffix(".err")
    with open(out_path, "w") as out, open(err_path, "w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(full, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = out_path.read_text(), err_path.read_text()
    out_path.unlink(missing_ok=True)
    err_path.unlink(missing_ok=True)
    return Run(
        full,
        wall,
        usage.ru_utime,
        usage.ru_stime,
        usage.ru_maxrss / 1024.0,  # KiB on Linux
        proc.returncode,
        stdout,
        stderr,
    )


def best_of(n: int, fn):
    """Runs `fn` n times and keeps the fastest run (wall clock)."""
    runs = [fn() for _ in range(max(1, n))]
    return min(runs, key=lambda r: r.wall_s)


def drop_page_cache() -> bool:
    """Drops the kernel page cache (needs root); False when not permitted."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def tree_bytes(root: Path, suffix: str = "") -> int:
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(suffix):
                total += (Path(dirpath) / name).stat().st_size
    return total


def rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


_RECORDS = re.compile(r"records: (\d+) read")
_ROWS = re.compile(
    r"rows: \d+ = (\d+) written \((\d+) events, (\d+) metrics, (\d+) dead letters\)"
    r" \+ (\d+) duplicates"
)


def parse_ingest_summary(text: str) -> dict:
    """Records read and rows written, from `whyslow ingest`'s summary."""
    rec, rows = _RECORDS.search(text), _ROWS.search(text)
    if not rec or not rows:
        raise RuntimeError(f"cannot read the ingest summary:\n{text}")
    return {
        "records": int(rec.group(1)),
        "written": int(rows.group(1)),
        "events": int(rows.group(2)),
        "metrics": int(rows.group(3)),
        "dead_letters": int(rows.group(4)),
        "duplicates": int(rows.group(5)),
    }


def segments(tools: Tools, store: Path) -> dict:
    """The store's committed segments per table, from its log: through `whyslow-bench
    segments` (the store's own reader) when it is built, else read here."""
    if tools.bench.exists():
        out = subprocess.run(
            [str(tools.bench), "segments", "--store", str(store)],
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(out.stdout)
    return read_log(store)


def read_log(store: Path) -> dict:
    """The visible segments per the log (ingest/src/store/log.rs): the newest checkpoint,
    then every later entry's adds and removes, in version order."""
    log_dir = store / "_log"
    names = sorted(p.name for p in log_dir.iterdir())
    checkpoints = [n for n in names if n.endswith(".checkpoint.json")]
    live: dict[str, dict] = {}
    since = 0
    if checkpoints:
        cp = json.loads((log_dir / checkpoints[-1]).read_text())
        since = cp["version"]
        live = {s["path"]: s for s in cp["segments"]}
    for n in names:
        if n.endswith(".checkpoint.json") or not n.endswith(".json"):
            continue
        if int(n.split(".")[0]) <= since:
            continue
        entry = json.loads((log_dir / n).read_text())
        for path in entry.get("remove", []):
            live.pop(path, None)
        for seg in entry.get("add", []):
            live[seg["path"]] = seg
    out: dict[str, list] = {}
    for seg in live.values():
        out.setdefault(seg["table"], []).append(
            {"path": str(store / seg["path"]), "rows": seg["rows"], "bytes": seg["bytes"]}
        )
    for table in ("events", "metrics", "dead_letters", "slowdowns", "causes"):
        out.setdefault(table, [])
    return out


def whyslow_ingest(tools: Tools, store: Path, paths: list, fmt: str, pin: bool) -> Run:
    cmd = [tools.whyslow, "--store", store, "ingest", "--no-progress", "--format", fmt, *paths]
    return measure(cmd, pin_one_core=pin).check()
