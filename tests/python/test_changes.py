"""Change data feed (dk.Table.changes) and incremental reads (dk.Table.stream) on tables
delta-rs writes with delta.enableChangeDataFeed (its DELETE/UPDATE/MERGE write cdc files).
Spark's answers for the same features are checked in tests/interop/test_cdf_dk.py; these run
without Spark.

Oracles:
* delta-rs ``load_cdf`` for every range [a, b]: the same rows, every column but
  ``_commit_timestamp`` (delta-rs takes commitInfo.timestamp); polars-deltalake ``scan_cdf``
  (delta-kernel-rs) with ``_commit_timestamp`` too;
* ``_commit_timestamp`` itself: each commit file's modification time (os.stat), made strictly
  increasing as PROTOCOL.md and delta-spark's history do;
* streams: the rows of the files each commit adds (read by pyarrow from the paths of the
  commit's JSON actions), in commit order; every saved offset resumes to exactly the rest.
"""
import collections
import json
import os
import shutil
import time
from urllib.parse import unquote

import pytest

from test_py_support import import_dk

dk = import_dk()
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
deltalake = pytest.importorskip("deltalake")
CDF = {"delta.enableChangeDataFeed": "true"}


def _tbl(lo, hi, part=True):
    ids = list(range(lo, hi))
    cols = {"id": pa.array(ids, pa.int64()), "v": pa.array(["v%d" % i for i in ids])}
    if part:
        cols["p"] = pa.array(["x" if i % 2 else "y" for i in ids])
    return pa.table(cols)


def make_table(path, part=True):
    """v0 append 20 (CDF on), v1 append 10, v2 delete id%5=0, v3 update, v4 merge."""
    kw = {"partition_by": ["p"]} if part else {}
    deltalake.write_deltalake(path, _tbl(0, 20, part), mode="append", configuration=CDF, **kw)
    deltalake.write_deltalake(path, _tbl(20, 30, part), mode="append", **kw)
    deltalake.DeltaTable(path).delete("id % 5 = 0")
    deltalake.DeltaTable(path).update(predicate="id < 8", updates={"v": "'upd'"})
    (deltalake.DeltaTable(path).merge(_tbl(25, 35, part), predicate="t.id = s.id",
                                      source_alias="s", target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())
    return 4


def _enc(v):
    if hasattr(v, "timestamp"):
        return int(round(v.timestamp() * 1e6))
    return v


def rows(tbl, drop=()):
    out = []
    for r in (tbl if isinstance(tbl, list) else pa.table(tbl).to_pylist()):
        out.append(json.dumps({k: _enc(v) for k, v in sorted(r.items()) if k not in drop},
                              sort_keys=True))
    return sorted(out)


def commit_times(path):
    """Commit file mtimes in ms, made strictly increasing (PROTOCOL.md / delta-spark)."""
    log = os.path.join(path, "_delta_log")
    vs = sorted(int(n[:20]) for n in os.listdir(log) if n.endswith(".json") and n[:20].isdigit())
    out, prev = {}, None
    for v in vs:
        m = os.stat(os.path.join(log, "%020d.json" % v)).st_mtime_ns // 1000000
        if prev is not None and m <= prev:
            m = prev + 1
        out[v] = prev = m
    return out


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cdf") / "t")
    latest = make_table(path)
    return path, latest


def test_every_range_equals_delta_rs(table):
    path, latest = table
    t = dk.Table(path)
    n = 0
    for a in range(latest + 1):
        for b in range(a, latest + 1):
            mine = pa.table(t.changes(start_version=a, end_version=b))
            theirs = pa.table(deltalake.DeltaTable(path).load_cdf(starting_version=a,
                                                                  ending_version=b).read_all())
            assert rows(mine, ("_commit_timestamp",)) == rows(theirs, ("_commit_timestamp",)), \
                (a, b)
            n += mine.num_rows
    assert n > 100


def test_commit_timestamps_are_commit_file_times(table):
    path, latest = table
    times = commit_times(path)
    got = pa.table(dk.Table(path).changes(start_version=0))
    for v, ts in zip(got.column("_commit_version").to_pylist(),
                     got.column("_commit_timestamp").to_pylist()):
        assert _enc(ts) == times[v] * 1000, v
    assert got.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")


def test_equals_polars_deltalake(table):
    pdl = pytest.importorskip("polars_deltalake")
    path, latest = table
    t = dk.Table(path)
    for a, b in ((0, latest), (2, 2), (3, 4), (1, 3)):
        theirs = pdl.scan_cdf(path, start_version=a, end_version=b).collect().to_arrow()
        assert rows(t.changes(start_version=a, end_version=b)) == rows(theirs), (a, b)


def test_unpartitioned_and_source_kinds(tmp_path):
    path = str(tmp_path / "u")
    latest = make_table(path, part=False)
    t = dk.Table(path)
    c = t.changes(start_version=0, end_version=latest)
    kinds = collections.Counter((f["commit_version"], f["source"]) for f in c.files())
    assert kinds[(0, "add")] >= 1 and kinds[(1, "add")] >= 1
    assert kinds[(2, "cdc")] >= 1 and kinds[(3, "cdc")] >= 1 and kinds[(4, "cdc")] >= 1
    theirs = deltalake.DeltaTable(path).load_cdf(starting_version=0).read_all()
    assert rows(c, ("_commit_timestamp",)) == rows(theirs, ("_commit_timestamp",))


def test_projection_and_filter(table):
    path, latest = table
    t = dk.Table(path)
    full = pa.table(t.changes(start_version=0)).to_pylist()

    def want(pred, cols):
        return sorted(json.dumps({k: _enc(r[k]) for k in cols}, sort_keys=True)
                      for r in full if pred(r))

    cases = [
        ("_change_type = 'delete'", lambda r: r["_change_type"] == "delete"),
        ("_commit_version >= 3 AND p = 'x'", lambda r: r["_commit_version"] >= 3 and r["p"] == "x"),
        ("id < 10 OR _change_type = 'update_postimage'",
         lambda r: r["id"] < 10 or r["_change_type"] == "update_postimage"),
        ("p = 'y'", lambda r: r["p"] == "y"),
    ]
    for text, pred in cases:
        for cols in (["id", "_change_type"], ["_commit_version", "v", "p"], None):
            got = pa.table(t.changes(start_version=0, columns=cols, filter=text))
            names = cols or got.schema.names
            assert got.schema.names == list(names)
            assert rows(got) == want(pred, names), (text, cols)
    # pruning: commit constants and partition values rule change files out unread
    allf = t.changes(start_version=0).files()
    assert len(t.changes(start_version=0, filter="_commit_version = 1").files()) == sum(
        f["commit_version"] == 1 for f in allf)
    assert len(t.changes(start_version=0, filter="p = 'x'").files()) < len(allf)
    with pytest.raises(dk.ColumnNotFound):
        t.changes(start_version=0, columns=["nope"])


def test_timestamp_ranges(table):
    path, latest = table
    times = commit_times(path)
    t = dk.Table(path)
    by_v = lambda a, b: rows(t.changes(start_version=a, end_version=b))  # noqa: E731
    assert rows(t.changes(start_timestamp=times[1], end_timestamp=times[3])) == by_v(1, 3)
    # a start between two commits is the next commit; an end between them the previous one
    assert rows(t.changes(start_timestamp=times[1] - 1, end_timestamp=times[3] + 1)) == by_v(1, 3)
    # both between the same two commits: empty, not an error
    if times[2] - times[1] > 2:
        assert t.changes(start_timestamp=times[1] + 1, end_timestamp=times[1] + 2).to_pyarrow().num_rows == 0
    with pytest.raises(dk.VersionNotFound, match="DELTA_TIMESTAMP_GREATER_THAN_COMMIT"):
        t.changes(start_timestamp=times[latest] + 86400000)
    with pytest.raises(dk.VersionNotFound, match="DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION"):
        t.changes(start_timestamp=0, end_timestamp=times[0] - 1000)


def test_range_errors(table, tmp_path):
    path, latest = table
    t = dk.Table(path)
    with pytest.raises(dk.InvalidArgument, match="DELTA_INVALID_CDC_RANGE"):
        t.changes(start_version=3, end_version=2)
    with pytest.raises(dk.VersionNotFound, match="DELTA_CDC_START_VERSION_AFTER_LATEST"):
        t.changes(start_version=latest + 1)
    assert t.changes(start_version=0, end_version=latest + 5).end_version == latest
    with pytest.raises(ValueError):
        t.changes()
    # no change data feed on the table
    plain = str(tmp_path / "plain")
    deltalake.write_deltalake(plain, _tbl(0, 3))
    with pytest.raises(dk.UnsupportedFeature, match="DELTA_MISSING_CHANGE_DATA.*|version 0"):
        dk.Table(plain).changes(start_version=0)


def test_missing_cdc_and_data_files_name_file_and_version(table, tmp_path):
    path, latest = table
    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy)
    c = dk.Table(copy).changes(start_version=2, end_version=2)
    cdc = [f for f in c.files() if f["source"] == "cdc"][0]
    os.unlink(os.path.join(copy, cdc["path"]))
    with pytest.raises(OSError) as e:
        pa.table(dk.Table(copy).changes(start_version=2, end_version=2))
    assert "version 2" in str(e.value) and os.path.basename(cdc["path"]) in str(e.value)
    add = [f for f in dk.Table(copy).changes(start_version=1, end_version=1).files()][0]
    os.unlink(os.path.join(copy, add["path"]))  # as VACUUM leaves an older version
    with pytest.raises(OSError, match="version 1"):
        pa.table(dk.Table(copy).changes(start_version=1, end_version=1))


# ---- streams -------------------------------------------------------------------------------

def commit_adds(path, v):
    """Rows of the files commit v adds with dataChange, from its JSON actions (pyarrow)."""
    out = []
    with open(os.path.join(path, "_delta_log", "%020d.json" % v)) as f:
        for line in f:
            a = json.loads(line).get("add")
            if a and a.get("dataChange", True):
                tbl = pq.read_table(os.path.join(path, unquote(a["path"])))
                for r in tbl.to_pylist():
                    r.update({k: val for k, val in a["partitionValues"].items()})
                    out.append(r)
    return out


def test_stream_from_version_equals_the_commits_adds(table):
    path, latest = table
    t = dk.Table(path)
    with pytest.raises(dk.UnsupportedFeature, match="DELTA_SOURCE_TABLE_IGNORE_CHANGES"):
        list(t.stream(starting_version=0, available_now=True))
    want = rows([r for v in range(latest + 1) for r in commit_adds(path, v)])
    got = [r for _, b in t.stream(starting_version=0, ignore_changes=True, available_now=True)
           for r in pa.table(b).to_pylist()]
    assert rows(got) == want
    # skip_change_commits: only the appends (v0, v1)
    got = [r for _, b in t.stream(starting_version=0, skip_change_commits=True,
                                   available_now=True) for r in pa.table(b).to_pylist()]
    assert rows(got) == rows(commit_adds(path, 0) + commit_adds(path, 1))


def test_stream_snapshot_then_commits_and_resume(table):
    path, latest = table
    t = dk.Table(path)
    snap = pa.table(t.snapshot().scan())
    batches = list(t.stream(max_files=1, available_now=True))
    assert len(batches) == t.snapshot().num_files >= 2  # one file a batch
    assert rows([r for _, b in batches for r in pa.table(b).to_pylist()]) == rows(snap)
    offs = [json.loads(o) for o, _ in batches]
    assert all(o["isStartingVersion"] for o in offs[:-1])
    keys = [(o["reservoirVersion"], o["index"]) for o in offs]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    # from every saved offset: exactly the batches after it
    for k, (off, _) in enumerate(batches[:-1]):
        rest = list(t.stream(resume_offset=off, max_files=1, available_now=True))
        assert [o for o, _ in rest] == [o for o, _ in batches[k + 1:]]
        assert rows([r for _, b in rest for r in pa.table(b).to_pylist()]) == rows(
            [r for _, b in batches[k + 1:] for r in pa.table(b).to_pylist()])


def test_stream_polls_new_commits(tmp_path):
    path = str(tmp_path / "live")
    deltalake.write_deltalake(path, _tbl(0, 4, False), configuration=CDF)
    t = dk.Table(path)
    s = t.stream(starting_version="latest")
    assert list(s) == []
    start = json.loads(s.offset)
    assert start["reservoirVersion"] == 1 and start["index"] == -1
    deltalake.write_deltalake(path, _tbl(4, 7, False), mode="append")
    got = list(s)
    assert len(got) == 1 and pa.table(got[0][1]).column("id").to_pylist() == [4, 5, 6]
    assert json.loads(got[0][0])["reservoirVersion"] == 2
    assert list(s) == []
    deltalake.write_deltalake(path, _tbl(7, 9, False), mode="append")
    off, b = s.poll(timeout=5, interval=0.05)
    assert pa.table(b).column("id").to_pylist() == [7, 8]
    # a change data feed stream of the same commits
    c = [pa.table(b) for _, b in t.stream(starting_version=1, change_data_feed=True,
                                          available_now=True)]
    got = pa.concat_tables(c)
    assert got.column("_change_type").to_pylist() == ["insert"] * 5
    assert sorted(got.column("_commit_version").to_pylist()) == [1, 1, 1, 2, 2]


def test_stream_latest_offset_and_batch_between(table):
    """Spark's MicroBatchStream calls: latestOffset(start, limit), planInputPartitions(start,
    end); the stream's own offset does not move."""
    path, latest = table
    s = dk.Table(path).stream(starting_version=0, ignore_changes=True)
    o1 = s.latest_offset(max_files=2)
    o2 = s.latest_offset(start=o1, max_files=2)
    assert json.loads(s.offset)["reservoirVersion"] == 0
    b1, b2 = s.batch_between(None, o1), s.batch_between(o1, o2)
    assert len(b1.files()) == 2 and b2.start_offset == o1 and b2.end_offset == o2
    whole = s.batch_between(None, o2)
    assert rows(whole) == rows(pa.concat_tables([pa.table(b1), pa.table(b2)]))


def test_stream_options_refused(table):
    path, _ = table
    t = dk.Table(path)
    with pytest.raises(ValueError, match="DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET"):
        t.stream(starting_version=1, starting_timestamp=0)
    with pytest.raises(ValueError, match="DELTA_ILLEGAL_OPTION"):
        t.stream(max_files=0)
    with pytest.raises(dk.VersionNotFound, match="DELTA_VERSION_NOT_FOUND"):
        t.stream(starting_version=99)
    with pytest.raises(dk.InvalidArgument, match="exclude_regex"):
        t.stream(exclude_regex="(")
    with pytest.raises(dk.InvalidArgument, match="offset"):
        t.stream(resume_offset='{"sourceVersion":1,"reservoirId":"x"}')


# ---- the CLI -------------------------------------------------------------------------------

def test_cli_changes_and_tail(table, tmp_path):
    import signal
    import subprocess
    import dkharness as h
    path, latest = table
    rc, out, err = h.run_dk("changes", path, "--from", "2", "--to", "3", check=True)
    got = [json.loads(x) for x in out.splitlines()]
    want = pa.table(dk.Table(path).changes(start_version=2, end_version=3)).to_pylist()
    assert sorted((r["id"], r["_change_type"], r["_commit_version"]) for r in got) == sorted(
        (r["id"], r["_change_type"], r["_commit_version"]) for r in want)
    rc, out, _ = h.run_dk("changes", path, "--from", "0", "--columns", "id,_change_type",
                          "--where", "_change_type = 'delete'", "--format", "csv", check=True)
    assert out.splitlines()[0] == "id,_change_type" and all(
        x.endswith(",delete") for x in out.splitlines()[1:])
    rc, out, _ = h.run_dk("changes", path, "--from", "2", "--to", "2", "--files", check=True)
    assert out and all(x.split("\t")[1] == "cdc" for x in out.splitlines())
    rc, _, err = h.run_dk("changes", path, "--from", "3", "--to", "1")
    assert rc == 1 and "DELTA_INVALID_CDC_RANGE" in err
    rc, _, err = h.run_dk("changes", path)
    assert rc == 2
    # tail: the batches of a stream, offsets on stderr, --once stops when caught up
    rc, out, err = h.run_dk("tail", path, "--from", "0", "--ignore-changes", "--once",
                            "--print-offsets", check=True)
    want = [r for v in range(latest + 1) for r in commit_adds(path, v)]
    assert rows([json.loads(x) for x in out.splitlines()]) == rows(want)
    offs = [json.loads(x.split(" ", 1)[1]) for x in err.splitlines() if x.startswith("offset ")]
    assert offs[-1]["reservoirVersion"] == latest + 1
    rc, _, err = h.run_dk("tail", path, "--from", "0", "--once")
    assert rc == 1 and "DELTA_SOURCE_TABLE_IGNORE_CHANGES" in err
    # following a live table until Ctrl-C
    live = str(tmp_path / "live")
    deltalake.write_deltalake(live, _tbl(0, 2, False), configuration=CDF)
    p = subprocess.Popen([str(h.dk_binary()), "tail", live, "--interval", "0.05"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        deltalake.write_deltalake(live, _tbl(10, 13, False), mode="append")
        lines = [json.loads(p.stdout.readline()) for _ in range(3)]
        assert sorted(x["id"] for x in lines) == [10, 11, 12]
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err


# ---- SQLite -------------------------------------------------------------------------------

def _sql(q):
    import dkharness as h
    rc, out, err = h.run_dk("sql", q, "--format", "jsonl")
    assert rc == 0, err
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def _py_rows(tbl, pred=lambda r: True, cols=None):
    out = []
    for r in pa.table(tbl).to_pylist():
        if pred(r):
            out.append(tuple(r[c] for c in cols))
    return sorted(out)


def test_sqlite_delta_changes(table):
    """delta_changes('path', start[, end]) in dk sql equals dk.Table.changes, with WHERE
    pushdown on metadata and partition columns, OR plans (rowids name change rows), and the
    range following the table when no end is given."""
    path, latest = table
    t = dk.Table(path)
    full = t.changes(start_version=0)
    q = "'" + path.replace("'", "''") + "'"
    cols = ("id", "p", "_change_type", "_commit_version")
    for where, pred in [
        ("1", lambda r: True),
        ("_change_type = 'delete'", lambda r: r["_change_type"] == "delete"),
        ("p = 'x' AND _commit_version >= 3", lambda r: r["p"] == "x" and r["_commit_version"] >= 3),
        ("id = 3 OR _change_type = 'insert'", lambda r: r["id"] == 3 or r["_change_type"] == "insert"),
        ("_commit_version IN (2, 4) OR id < 5",
         lambda r: r["_commit_version"] in (2, 4) or r["id"] < 5),
    ]:
        got = _sql("SELECT id, p, _change_type, _commit_version FROM delta_changes(%s, 0) "
                   "WHERE %s" % (q, where))
        assert sorted(tuple(r[c] for c in cols) for r in got) == _py_rows(full, pred, cols), where
    got = _sql("SELECT _commit_version v, count(*) n FROM delta_changes(%s, start=1, end=3) "
               "GROUP BY 1 ORDER BY 1" % q)
    want = collections.Counter(pa.table(t.changes(start_version=1, end_version=3))
                               .column("_commit_version").to_pylist())
    assert [(r["v"], r["n"]) for r in got] == sorted(want.items())
    # timestamps come back as the delta vtab's ISO text
    ts = _sql("SELECT _commit_timestamp FROM delta_changes(%s, 1, 1) LIMIT 1" % q)[0]
    assert ts["_commit_timestamp"].endswith("Z")
    import dkharness as h
    rc, _, err = h.run_dk("sql", "SELECT * FROM delta_changes(%s, 3, 1)" % q)
    assert rc == 1 and "DELTA_INVALID_CDC_RANGE" in err
    rc, _, err = h.run_dk("sql", "SELECT * FROM delta_changes")
    assert rc == 1 and "CREATE VIRTUAL TABLE" in err


def test_sqlite_extension_delta_changes_follows_the_table(tmp_path):
    """The loadable extension in plain SQLite: CREATE VIRTUAL TABLE c USING
    delta_changes('path', start=1); a statement after a commit sees it."""
    import subprocess
    import dkharness as h
    ext = h.build_dir() / "dk_sqlite.so"
    py = "/usr/bin/python3"
    if not ext.exists() or subprocess.run(
            [py, "-c", "import sqlite3; sqlite3.connect(':memory:').enable_load_extension(True)"],
            capture_output=True).returncode:
        pytest.skip("no dk_sqlite.so or no Python with sqlite3 extension loading")
    path = str(tmp_path / "t")
    deltalake.write_deltalake(path, _tbl(0, 3, False), configuration=CDF)
    deltalake.write_deltalake(path, _tbl(3, 5, False), mode="append")
    host = r"""
import sqlite3, sys, json
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension(sys.argv[1])
con.execute("CREATE VIRTUAL TABLE c USING delta_changes('%s', start=1)" % sys.argv[2])
print(json.dumps(con.execute("SELECT id, _change_type, _commit_version FROM c ORDER BY id").fetchall()))
sys.stdin.readline()
print(json.dumps(con.execute("SELECT id, _change_type, _commit_version FROM c ORDER BY id").fetchall()))
try:
    con.execute("INSERT INTO c (id) VALUES (9)")
    print(json.dumps("inserted"))
except sqlite3.Error as e:
    print(json.dumps(str(e)))
"""
    p = subprocess.Popen([py, "-c", host, str(ext), path], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=h.sqlite_host_env())
    first = json.loads(p.stdout.readline())
    assert first == [[3, "insert", 1], [4, "insert", 1]]
    deltalake.DeltaTable(path).delete("id = 4")
    out, _ = p.communicate("go\n", timeout=30)
    second, refused = map(json.loads, out.splitlines())
    assert "may not be modified" in refused  # no INSERT (main's delta INSERT is delta's only)
    assert sorted(map(tuple, second)) == [(3, "insert", 1), (4, "delete", 2), (4, "insert", 1)]
