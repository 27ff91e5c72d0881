"""Row-level DML racing in 4 processes on one table (issue #15, "Concurrency"): DELETE, UPDATE and
appends start together on a partitioned table with deletion vectors. Each statement either
lands (at some version, after any rebase over winners it does not conflict with) or fails with
the exception delta-spark's ConflictChecker raises for that race:
  * a DELETE/UPDATE whose files a winner removed or re-added with a new DV:
    ConcurrentDeleteReadException (or ConcurrentDeleteDeleteException);
  * a DELETE/UPDATE whose read partitions a winner appended to: ConcurrentAppendException;
and appends (blind) always land. (Under Serializable, delta-spark's default, the adds of a
concurrent DML commit, DV re-adds included, in a partition we read are checked first, so a
DELETE racing a DELETE of the same partition fails with ConcurrentAppendException, as in Spark.) Then no row is lost or duplicated: the landed statements,
replayed one by one in their commit order on a copy of the starting table, give the same rows
as the raced table, read by delta-rs (DataFusion, which applies DVs) and by dk.

DK_DML_RACE_OPS sets the statements per process (default 6)."""
import multiprocessing as mp
import os
import shutil

import pyarrow as pa
import pytest

from test_py_support import import_dk

dk = import_dk()  # skips under an ASan build of the binding (see test_py_support.py)
deltalake = pytest.importorskip("deltalake")

OPS = int(os.environ.get("DK_DML_RACE_OPS", "6"))
N = 4000
CONFLICTS = ("ConcurrentAppendException", "ConcurrentDeleteReadException",
             "ConcurrentDeleteDeleteException")


def rows(ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([0] * len(ids), pa.int64()),
                     "p": pa.array([i // 1000 if i < N else 3 for i in ids], pa.int32())})


def statements(w):
    """The statements of worker w (partition p holds ids p*1000 .. p*1000+999, and every
    appended row): DELETEs and UPDATEs of partitions 0-2 (workers 0, 1 and 3: the same files)
    and of partition 3 (worker 3), appends into partition 3 (worker 2). Every predicate
    matches rows of the starting table."""
    out = []
    for s in range(OPS):
        if w == 0:
            out.append(("delete", "p = %d AND id %% 50 = %d" % (s % 3, s)))
        elif w == 1:
            out.append(("update", {"v": "v + 1"}, "p = %d AND id %% 50 = %d" % (s % 3, 20 + s)))
        elif w == 2:
            first = 100000 + 100 * s
            out.append(("append", [first + 4 * i + 3 for i in range(20)]))
        elif s % 2:
            out.append(("update", {"v": "v * 10 + 3"}, "p = 3 AND id %% 9 = %d" % s))
        else:
            out.append(("delete", "p = %d AND id %% 40 = %d" % (s % 3, 30 + s)))
    return out


def run(root, st):
    """Runs one statement; the version it committed at (None: nothing to commit)."""
    t = dk.Table(root)
    if st[0] == "append":
        return dk.write_table(root, rows(st[1]), mode="append")["version"]
    m = t.delete(st[1]) if st[0] == "delete" else t.update(st[1], predicate=st[2])
    v = m.get("version")
    return v if v is not None and v >= 0 else None


def worker(root, w, barrier, q):
    out = []
    barrier.wait()
    for i, st in enumerate(statements(w)):
        try:
            out.append((w, i, "landed", run(root, st)))
        except dk.Conflict as e:
            out.append((w, i, type(e).__name__, None))
    q.put(out)


def table_rows(root):
    got = pa.table(dk.Table(root).snapshot().scan(columns=["id", "v", "p"]))
    return sorted(zip(*(got[c].to_pylist() for c in ("id", "v", "p"))))


def deltars_rows(root):
    dt = deltalake.DeltaTable(root)
    got = pa.table(deltalake.QueryBuilder().register("t", dt).execute(
        "SELECT id, v, p FROM t").read_all())
    return sorted(zip(*(got[c].to_pylist() for c in ("id", "v", "p"))))


def test_dml_processes_race(tmp_path):
    root, start = str(tmp_path / "t"), str(tmp_path / "start")
    dk.write_table(root, rows(list(range(N))), partition_by=["p"], target_file_size=8 << 10,
                   properties={"delta.enableDeletionVectors": "true",
                               "delta.minReaderVersion": "3", "delta.minWriterVersion": "7"})
    shutil.copytree(root, start)
    v0 = dk.Table(root).snapshot().version
    ctx = mp.get_context("spawn")
    barrier, q = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(root, w, barrier, q)) for w in range(4)]
    for p in procs:
        p.start()
    results = [r for _ in procs for r in q.get(timeout=600)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    stmts = {w: statements(w) for w in range(4)}
    for w, i, outcome, v in results:
        if outcome != "landed":
            assert stmts[w][i][0] != "append", "a blind append failed with %s" % outcome
            assert outcome in CONFLICTS, outcome
    landed = sorted((v, w, i) for w, i, outcome, v in results if outcome == "landed" and v)
    last = dk.Table(root).snapshot().version
    assert [v for v, _, _ in landed] == list(range(v0 + 1, last + 1)), \
        "each landed statement at its own version, no gap"
    assert any(o != "landed" for _, _, o, _ in results) or OPS < 4, "the race had no conflict"
    assert any(stmts[w][i][0] != "append" for _, w, i in landed), "no DELETE/UPDATE landed"
    # the landed statements, one after another, on the starting table
    for v, w, i in landed:
        assert run(start, stmts[w][i]) == v, "replay of worker %d statement %d" % (w, i)
    want = table_rows(start)
    assert len({r[0] for r in want}) == len(want)
    assert table_rows(root) == want, "dk reads the raced table as the serial replay"
    assert deltars_rows(root) == want, "delta-rs reads the raced table as the serial replay"
