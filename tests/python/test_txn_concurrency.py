"""Racing writers: N processes (and N threads in one process) each append M times to one table
through dk.Transaction; every append must land exactly once at its own version, with no gap,
and every row must be there when delta-rs (an independent reader) and dk read the table.

Data files are written by pyarrow (the engine writes its files; dk commits them). The full
size (4 processes x 50 appends) runs by default; DK_TXN_RACE_APPENDS overrides M.
"""
import json
import multiprocessing as mp
import os
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from test_py_support import import_dk

dk = import_dk()  # skips this module under an ASan build without LD_PRELOAD

APPENDS = int(os.environ.get("DK_TXN_RACE_APPENDS", "50"))
SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "w", "type": "long", "nullable": True, "metadata": {}},
    {"name": "seq", "type": "long", "nullable": True, "metadata": {}}]})


def create(root):
    os.makedirs(root, exist_ok=True)
    x = dk.Table(root).transaction(create=True, operation="CREATE TABLE",
                                   operation_parameters={"isManaged": "false",
                                                         "partitionBy": "[]"})
    x.set_metadata(SCHEMA, [])
    return x.commit()["version"]


def append(t, root, w, seq):
    name = "part-%05d-w%d-s%d.parquet" % (seq, w, seq)
    pq.write_table(pa.table({"w": pa.array([w], pa.int64()), "seq": pa.array([seq], pa.int64())}),
                   os.path.join(root, name))
    size = os.path.getsize(os.path.join(root, name))
    x = t.transaction(operation="WRITE", operation_parameters={"mode": "Append",
                                                               "partitionBy": "[]"})
    x.add_file(name, size=size, modification_time=1,
               stats=json.dumps({"numRecords": 1, "minValues": {"w": w, "seq": seq},
                                 "maxValues": {"w": w, "seq": seq},
                                 "nullCount": {"w": 0, "seq": 0}}))
    return x.commit()


def writer_proc(root, w, n, q):
    t = dk.Table(root)
    out = []
    for s in range(n):
        r = append(t, root, w, s)
        out.append((w, s, r["version"], r["attempts"]))
    q.put(out)


def check(root, results, writers, n):
    versions = sorted(r[2] for r in results)
    assert versions == list(range(1, writers * n + 1)), "each append at its own version, no gap"
    assert dk.Table(root).snapshot().version == writers * n
    want = {(w, s) for w in range(writers) for s in range(n)}
    got = pa.table(dk.Table(root).snapshot().scan())
    assert set(zip(got["w"].to_pylist(), got["seq"].to_pylist())) == want
    assert got.num_rows == len(want)
    from deltalake import DeltaTable
    dt = DeltaTable(root)
    assert dt.version() == writers * n
    rows = dt.to_pyarrow_table()
    assert set(zip(rows["w"].to_pylist(), rows["seq"].to_pylist())) == want
    assert rows.num_rows == len(want)
    hist = dt.history()
    assert len(hist) == writers * n + 1


def test_processes_race(tmp_path):
    root = str(tmp_path / "t")
    create(root)
    writers = 4
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=writer_proc, args=(root, w, APPENDS, q)) for w in range(writers)]
    for p in ps:
        p.start()
    results = []
    for _ in ps:
        results += q.get(timeout=600)
    for p in ps:
        p.join(timeout=60)
        assert p.exitcode == 0
    check(root, results, writers, APPENDS)
    retried = sum(1 for r in results if r[3] > 1)
    print("4 processes x %d appends: %d commits needed a retry" % (APPENDS, retried))


def test_threads_race(tmp_path):
    root = str(tmp_path / "t")
    create(root)
    writers, n = 4, max(5, APPENDS // 5)
    results, errors = [], []

    def run(w):
        try:
            t = dk.Table(root)  # one Table per thread: commits run concurrently
            for s in range(n):
                r = append(t, root, w, s)
                results.append((w, s, r["version"], r["attempts"]))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    check(root, results, writers, n)


def test_blind_appends_never_conflict_but_overwrite_does(tmp_path):
    root = str(tmp_path / "t")
    create(root)
    t = dk.Table(root)
    append(t, root, 0, 0)
    ow = t.transaction(operation="WRITE", operation_parameters={"mode": "Overwrite",
                                                                "partitionBy": "[]"})
    for i in ow.read_files():
        ow.remove_file(i)
    append(t, root, 1, 1)
    with pytest.raises(dk.ConcurrentAppendException) as ei:
        ow.commit()
    assert ei.value.winning_version == 2
    assert "version 2" in str(ei.value)
    assert dk.Table(root).snapshot().version == 2
