"""DuckDB peer for the query benchmark: views over exactly the Parquet segments whyslow's
log lists, then each query file timed (execution and fetching the result as Arrow).

usage: duckdb_query.py SEGMENTS.json WARMUP REPEAT FILE.sql...
Prints {"open_s": …} (views created) then one JSON line per file like whyslow-bench.
"""

import json
import sys
import time
from pathlib import Path

import duckdb

segments_path, warmup, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
files = [Path(f) for f in sys.argv[4:]]
segments = json.loads(Path(segments_path).read_text())

start = time.perf_counter()
con = duckdb.connect()
con.execute("SET TimeZone = 'UTC'")
for table in ("events", "metrics"):
    paths = [s["path"] for s in segments[table]]
    listing = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
    con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listing}])")
print(json.dumps({"open_s": time.perf_counter() - start}), flush=True)


def run(sql):
    rel = con.sql(sql)  # a relation: fetching it as Arrow makes no extra copy
    fetch = getattr(rel, "to_arrow_table", None) or getattr(rel, "arrow")
    return fetch().num_rows


for f in files:
    sql = f.read_text()
    times, rows = [], 0
    for i in range(warmup + repeat):
        t = time.perf_counter()
        rows = run(sql)
        secs = time.perf_counter() - t
        if i >= warmup:
            times.append(secs)
    name = f.name.removesuffix(".sql")
    print(json.dumps({"query": name, "times_s": times, "rows": rows}), flush=True)
