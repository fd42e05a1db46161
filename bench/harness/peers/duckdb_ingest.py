"""DuckDB peer for the ingest benchmark: JSONL -> one zstd Parquet file.

usage: duckdb_ingest.py THREADS INPUT.jsonl OUTPUT.parquet   (THREADS 0: all cores)
Prints a JSON line with the time spent inside DuckDB (connect to COPY done).
"""

import json
import sys
import time

import duckdb

threads, src, dst = int(sys.argv[1]), sys.argv[2], sys.argv[3]
start = time.perf_counter()
con = duckdb.connect()
if threads > 0:  # 0: DuckDB's default, every core
    con.execute(f"SET threads = {threads}")
con.execute(
    f"COPY (SELECT * FROM read_json('{src}')) TO '{dst}' (FORMAT parquet, COMPRESSION zstd)"
)
elapsed = time.perf_counter() - start
rows = con.execute(f"SELECT count(*) FROM read_parquet('{dst}')").fetchone()[0]  # footer only
print(json.dumps({"inner_s": elapsed, "rows": rows}))
