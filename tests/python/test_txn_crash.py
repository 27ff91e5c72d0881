"""Crash safety: a writer process appending in a loop is killed with SIGKILL at a random moment,
again and again on the same table. After every kill the table must open in dk and delta-rs,
every commit file must be complete (no partial commit is ever visible), and every commit the
writer reported as OK (it prints the version and txnId only after dk_txn_commit returned) must
be in the log with that txnId. DK_CRASH_RUNS sets the number of kills (default 10; the issue's
full run is DK_CRASH_RUNS=100 or more). Spark reads the result in tests/interop when run there.
"""
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from test_py_support import import_dk

dk = import_dk()  # skips this module under an ASan build without LD_PRELOAD

RUNS = int(os.environ.get("DK_CRASH_RUNS", "10"))

WRITER = textwrap.dedent(r"""
    import json, os, sys
    import pyarrow as pa, pyarrow.parquet as pq
    import dk
    root, start = sys.argv[1], int(sys.argv[2])
    t = dk.Table(root)
    i = start
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    while True:
        name = "part-%06d.parquet" % i
        pq.write_table(pa.table({"i": pa.array([i], pa.int64())}), os.path.join(root, name))
        x = t.transaction(operation="WRITE",
                          operation_parameters={"mode": "Append", "partitionBy": "[]"})
        x.add_file(name, size=os.path.getsize(os.path.join(root, name)), modification_time=1,
                   stats=json.dumps({"numRecords": 1, "minValues": {"i": i},
                                     "maxValues": {"i": i}, "nullCount": {"i": 0}}))
        r = x.commit()
        sys.stdout.write("OK %d %s %d\n" % (r["version"], r["txn_id"], i))
        sys.stdout.flush()
        i += 1
""")


def test_kill9_writer(tmp_path):
    deltalake = pytest.importorskip("deltalake")
    root = str(tmp_path / "t")
    dk.Table.create(root, "i long")
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(int(os.environ.get("DK_CRASH_SEED", "14")))
    acked = {}  # version -> (txnId, i)
    nxt = 0
    for run in range(RUNS):
        p = subprocess.Popen([sys.executable, str(script), root, str(nxt)],
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "READY"
        time.sleep(rng.uniform(0.0, 0.25))  # random point: data write, commit, or between
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate()
        for line in out.splitlines():
            ok, v, txn, i = line.split()
            assert ok == "OK"
            acked[int(v)] = (txn, int(i))
            nxt = max(nxt, int(i) + 1)
        nxt += 1  # the killed attempt's file name may exist: never reuse it
        # the table reads, in dk and delta-rs, and no commit file is partial
        snap = dk.Table(root).snapshot()
        log = os.path.join(root, "_delta_log")
        for v in range(snap.version + 1):
            with open(os.path.join(log, "%020d.json" % v)) as f:
                text = f.read()
            assert text.endswith("\n"), "partial commit %d" % v
            for ln in text.splitlines():
                json.loads(ln)
        dt = deltalake.DeltaTable(root)
        assert dt.version() == snap.version
        # every acknowledged commit is there with its txnId
        for v, (txn, i) in acked.items():
            with open(os.path.join(log, "%020d.json" % v)) as f:
                first = json.loads(f.readline())
            assert first["commitInfo"]["txnId"] == txn, v
    rows = dk.Table(root).snapshot().scan()
    import pyarrow as pa
    got = set(pa.table(rows)["i"].to_pylist())
    assert {i for _, i in acked.values()} <= got
    assert len(got) == dk.Table(root).snapshot().version  # one row per commit after create
    print("%d kills, %d acknowledged commits, %d versions" % (RUNS, len(acked),
                                                             dk.Table(root).snapshot().version))
