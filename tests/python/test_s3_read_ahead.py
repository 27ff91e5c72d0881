"""Read-ahead of dk's scans on the S3 server (dk_scan_options.read_ahead_bytes, issue #17):
each reader (with threads > 1 each reader thread; with 1 thread the calling thread, whose two
fetching tasks run on an executor of the stream's own) fetches the next row group's column
chunks, or the next file's footer and first row group, while it decodes the current one.

The table is written to the S3 server by delta-rs (several files, several row groups each);
the oracle is delta-rs reading it back from the same bucket. Each scan runs with read-ahead
and without (read_ahead=-1) through a counting proxy (s3env.FaultProxy): the rows must equal
delta-rs's, and read-ahead must fetch exactly the bytes of the scan without it — no range a
reader then skips (a filter's row groups and pages, unselected columns) is fetched ahead.
Faults on the fetches read ahead end in the same clean error as without read-ahead."""

from __future__ import annotations

import pytest

from s3env import FaultProxy, Rule, s3_server  # noqa: F401  (fixture)
from test_py_support import import_dk

dk = import_dk()
pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")

PREFIX = "read-ahead"
ROWS = 60_000


@pytest.fixture(scope="module")
def table(s3_server):
    """s3://<bucket>/read-ahead/t: 4 files of 15,000 rows, 3 row groups of 5,000 each."""
    import pyarrow.compute as pc
    uri = f"s3://{s3_server.bucket}/{PREFIX}/t"
    so = s3_server.options()
    ids = pa.array(range(ROWS), pa.int64())
    data = pa.table({"id": ids, "k": pc.cast(pc.divide(ids, 7), pa.int32()),
                     "s": pc.binary_join_element_wise("row-", pc.cast(ids, pa.string()), ""),
                     "x": pc.multiply(pc.cast(ids, pa.float64()), 0.5)})
    for i in range(4):
        part = data.slice(i * ROWS // 4, ROWS // 4)
        deltalake.write_deltalake(uri, part, mode="append", storage_options=so,
                                  writer_properties=deltalake.WriterProperties(
                                      max_row_group_size=5000))
    dt = deltalake.DeltaTable(uri, storage_options=so)
    return uri, dt


def _rows(t, cols):
    return sorted(zip(*(t.column(c).to_pylist() for c in cols)))


def _scan(srv, uri, endpoint, read_ahead, threads=2, **kw):
    t = dk.Table(uri, storage_options=srv.options(endpoint))
    return pa.table(t.snapshot().scan(threads=threads, read_ahead=read_ahead, **kw))


def _fetched(proxy):
    data = [e for e in proxy.requests("GET") if "/_delta_log/" not in e["target"]
            and "list-type" not in e["target"]]
    return len(data), sum(e["resp_len"] for e in data)


CASES = {
    "full": ({}, None),
    "projection": ({"columns": ["s", "id"]}, None),
    "filter": ({"filter": "id >= 20000 AND id < 26000"}, ("id", 20000, 26000)),
    "small budget": ({"read_ahead": 1 << 10}, None),  # chunks larger than it: not read ahead
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_read_ahead_rows_and_bytes(s3_server, table, case, threads):
    uri, dt = table
    kw, flt = CASES[case]
    kw = dict(kw)
    budget = kw.pop("read_ahead", 0)
    expect_t = dt.to_pyarrow_table()
    cols = kw.get("columns") or [f.name for f in expect_t.schema]
    expect = _rows(expect_t, cols)
    if flt:
        c, lo, hi = flt
        i = cols.index(c)
        expect = [r for r in expect if lo <= r[i] < hi]
    proxy = FaultProxy(s3_server.endpoint)
    try:
        got = _scan(s3_server, uri, proxy.endpoint, budget, threads, **kw)
        ahead = _fetched(proxy)
        proxy.clear()
        base = _scan(s3_server, uri, proxy.endpoint, -1, threads, **kw)
        plain = _fetched(proxy)
    finally:
        proxy.close()
    assert got.column_names == cols
    assert _rows(got, cols) == expect
    assert _rows(base, cols) == expect
    # the same bytes either way (read-ahead fetches nothing a reader would not read)
    assert ahead[1] == plain[1], (ahead, plain)
    assert ahead[0] <= plain[0] + 1, (ahead, plain)


def _max_in_flight(proxy) -> int:
    """The most data GETs the server was answering at one time."""
    ev = sorted([(e["start"], 1) for e in proxy.requests("GET", match=r"\.parquet")] +
                [(e["end"], -1) for e in proxy.requests("GET", match=r"\.parquet")],
                key=lambda x: (x[0], x[1]))
    n = best = 0
    for _, d in ev:
        n += d
        best = max(best, n)
    return best


def test_read_ahead_one_thread_overlaps_fetches(s3_server, table):
    """With one thread (Python's default scan()), read-ahead has fetches in flight while the
    caller decodes: with every data GET answered 50 ms late, some GETs overlap (the next
    file's open beside the next row group's chunks); without read-ahead they never do."""
    uri, dt = table
    cols = [f.name for f in dt.schema().to_arrow()]
    expect = _rows(dt.to_pyarrow_table(), cols)
    seen = {}
    for read_ahead in (0, -1):
        proxy = FaultProxy(s3_server.endpoint)
        proxy.add(Rule("delay", "GET", match=r"\.parquet", delay=0.05))
        try:
            got = _scan(s3_server, uri, proxy.endpoint, read_ahead, threads=1)
            seen[read_ahead] = _max_in_flight(proxy)
        finally:
            proxy.close()
        assert _rows(got, cols) == expect
    assert seen[-1] == 1, seen
    assert seen[0] >= 2, seen


@pytest.mark.parametrize("threads", [1, 2])
def test_read_ahead_fetch_fails(s3_server, table, threads):
    """Every ranged data GET after the first few fails (403, not retried): read-ahead or not,
    the scan ends in the same clean error naming the file, and nothing hangs."""
    uri, _ = table
    msgs = []
    for read_ahead in (0, -1):
        proxy = FaultProxy(s3_server.endpoint)
        proxy.add(Rule("status", "GET", match=r"\.parquet", status=403, code="AccessDenied",
                       skip=3))
        try:
            with pytest.raises((dk.DkError, OSError)) as e:
                _scan(s3_server, uri, proxy.endpoint, read_ahead, threads)
        finally:
            proxy.close()
        msgs.append(str(e.value))
    for m in msgs:
        assert "403" in m and ".parquet" in m, m
