"""pyarrow peer for the ingest benchmark: JSONL -> one zstd Parquet file.

usage: pyarrow_ingest.py THREADS INPUT.jsonl OUTPUT.parquet
THREADS=1 pins Arrow's CPU and I/O pools to one thread each. Prints a JSON line with the
time spent from reading to the file written, or the error pyarrow gave.
"""

import json
import sys
import time

import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq

threads, src, dst = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if threads == 1:
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
start = time.perf_counter()
try:
    table = pj.read_json(src, read_options=pj.ReadOptions(use_threads=threads != 1))
    pq.write_table(table, dst, compression="zstd")
except pa.ArrowInvalid as e:
    print(json.dumps({"error": str(e)}))
    sys.exit(3)
print(json.dumps({"inner_s": time.perf_counter() - start, "rows": table.num_rows}))
