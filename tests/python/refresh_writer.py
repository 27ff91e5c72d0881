"""refresh_writer.py PATH N [PAUSE_S] — a delta-rs writer for the refresh tests (test_py_refresh.py,
test_sqlite_refresh.py): N commits to the partitioned table at PATH — appends, a delete every
7th, one append that adds column x (schema_mode="merge") half-way, a checkpoint every 5th;
PAUSE_S seconds (default 0.01) between commits."""

import sys, time
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
path, n = sys.argv[1], int(sys.argv[2])
pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.01
def batch(lo, hi, extra=False):
    cols = {"id": pa.array(range(lo, hi), pa.int64()),
            "p": pa.array(["a" if i % 2 else "b" for i in range(lo, hi)], pa.string())}
    if extra:
        cols["x"] = pa.array([i * 2 for i in range(lo, hi)], pa.int64())
    return pa.table(cols)
for i in range(n):
    extra = i >= n // 2
    if i == n // 2:
        write_deltalake(path, batch(i * 10, i * 10 + 10, True), mode="append",
                        partition_by=["p"], schema_mode="merge")
    elif i % 7 == 3:
        DeltaTable(path).delete("id % 3 = 0")
    else:
        write_deltalake(path, batch(i * 10, i * 10 + 10, extra), mode="append",
                        partition_by=["p"])
    if i % 5 == 4:
        DeltaTable(path).create_checkpoint()
    time.sleep(pause)
