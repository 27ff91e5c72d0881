"""dk's change data feed and streams against Spark (the oracle of tests/interop/cdf_oracle.py:
14 tables written by Spark + delta-spark, one by delta-rs, one from the corpus; Spark's
table_changes for every sampled range, DK_CDF_ALL_RANGES=1 for every range, and its
streaming source batch by batch under Trigger.AvailableNow).

* every range: dk's rows equal Spark's (multiset, every column, the metadata columns
  `_change_type`, `_commit_version`, `_commit_timestamp` included); where Spark fails dk fails
  with the same Delta error class in its message (a range over vacuumed files: a missing-file
  error naming the version and the file, as Spark's is a FileNotFound without a class);
* every stream: dk's micro-batches (available_now, the same options) have Spark's end offsets
  (its DeltaSourceOffset JSON, field by field) and rows, batch by batch; the streams Spark
  refuses dk refuses with the same error class;
* restarting from any saved offset — dk's own or Spark's, as a Spark checkpoint holds it —
  hands out exactly the rest of the batches: no duplicate, no gap;
* the live stream: a stream reading while a column is added fails at that commit with
  DELTA_SCHEMA_CHANGED_WITH_STARTING_OPTIONS after the batch Spark delivered.
"""
import calendar
import collections
import datetime as dt
import json
import os
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cdf_peers as cp  # noqa: E402

pytestmark = pytest.mark.interop

pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def cdf():
    try:
        import dk  # noqa: F401
    except ImportError:
        pytest.skip("the dk binding is not installed (make test-python installs it)")
    out = cp.cdf_dir()
    import cdf_oracle
    if not all(os.path.exists(os.path.join(out, n, "cdf_oracle.json"))
               for n in cdf_oracle.table_names()):
        pytest.skip("CDF oracle not built: `make test-cdf-oracle` builds it")
    return out


def _dk_table(root):
    import dk
    return dk.Table(root)


def _range_kwargs(r):
    if r["by"] == "version":
        kw = {"start_version": r["start"]}
        if r.get("end") is not None:
            kw["end_version"] = r["end"]
    else:
        kw = {"start_timestamp": r["start_ts"]}
        if r.get("end_ts") is not None:
            kw["end_timestamp"] = r["end_ts"]
    return kw


def _columns(spark_rows, fallback):
    return list(json.loads(spark_rows[0]).keys()) if spark_rows else fallback


def test_ranges_equal_spark(cdf):
    import dk
    counts = collections.Counter()
    bad = []
    for name in cp.tables(cdf):
        o = cp.load(cdf, name)
        if o["ranges_mode"] == "none":
            continue
        t = _dk_table(os.path.join(cdf, name, "delta"))
        for r in o["ranges"]:
            kw = _range_kwargs(r)
            try:
                got, err = pa.table(t.changes(**kw)), None
            except (dk.DkError, OSError) as e:  # OSError: raised while pyarrow reads
                got, err = None, e
            if r.get("error_class"):
                cls = r["error_class"]
                if err is None:
                    bad.append((name, kw, "no error; Spark: " + cls))
                elif "DELTA_" in cls and cls not in str(err):
                    bad.append((name, kw, "error %s; Spark: %s" % (err, cls)))
                elif "DELTA_" not in cls and not ("version" in str(err) and
                                                  "No such file" in str(err)):
                    # Spark fails reading a vacuumed file without an error class
                    bad.append((name, kw, "error %s; Spark: %s" % (err, r["error"][:200])))
                counts["errors"] += 1
                continue
            if err is not None:
                bad.append((name, kw, "dk failed: %s" % err))
                continue
            spark = cp.rows_of(cdf, name, r["rows_file"])
            mine = cp.encode_arrow(got, _columns(spark, [c for c, _ in o["columns"]]))
            if mine != sorted(spark):
                a, b = collections.Counter(mine), collections.Counter(spark)
                bad.append((name, kw, "dk only %s, Spark only %s" % (
                    list((a - b).elements())[:3], list((b - a).elements())[:3])))
            counts["rows"] += len(spark)
            counts["ranges"] += 1
    assert not bad, bad[:10]
    assert counts["ranges"] >= 400 and counts["errors"] >= 100, counts


def _ts_ms(s):
    d = dt.datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f")
    return calendar.timegm(d.timetuple()) * 1000 + d.microsecond // 1000


def stream_kwargs(opts, cdf_mode):
    """Spark's readStream options as dk.Table.stream keywords (AvailableNow)."""
    kw = {"available_now": True, "change_data_feed": cdf_mode}
    names = {"maxFilesPerTrigger": "max_files", "maxBytesPerTrigger": "max_bytes"}
    flags = {"ignoreDeletes": "ignore_deletes", "ignoreChanges": "ignore_changes",
             "skipChangeCommits": "skip_change_commits"}
    for k, v in opts.items():
        if k == "startingVersion":
            kw["starting_version"] = v if v == "latest" else int(v)
        elif k == "startingTimestamp":
            kw["starting_timestamp"] = _ts_ms(v)
        elif k in names:
            kw[names[k]] = int(v)
        elif k in flags:
            kw[flags[k]] = v == "true"
        elif k == "excludeRegex":
            kw["exclude_regex"] = v
        elif k == "failOnDataLoss":
            kw["allow_data_loss"] = v == "false"
        else:
            raise KeyError(k)
    return kw


def _run(t, kw):
    """[(end offset dict, arrow table)] of a dk stream read to its available-now end."""
    return [(json.loads(off), pa.table(b)) for off, b in t.stream(**kw)]


def _compare_batches(tag, spark_batches, got, bad):
    if len(got) != len(spark_batches):
        bad.append((tag, "%d batches, Spark %d" % (len(got), len(spark_batches))))
    for i, (b, (off, tbl)) in enumerate(zip(spark_batches, got)):
        if off != b["end_offset"]:
            bad.append((tag, i, "end offset %s, Spark %s" % (off, b["end_offset"])))
        cols = _columns(b["rows"], list(tbl.schema.names))
        if cp.encode_arrow(tbl, cols) != sorted(b["rows"]):
            bad.append((tag, i, "rows differ"))


def _streams(cdf):
    for name in cp.tables(cdf):
        for s in cp.load(cdf, name)["streams"]:
            if not s["live"]:
                yield name, s


def test_streams_equal_spark(cdf):
    import dk
    bad, n_ok, n_err = [], 0, 0
    for name, s in _streams(cdf):
        t = _dk_table(os.path.join(cdf, name, "delta"))
        tag = (name, s["name"])
        try:
            got, err = _run(t, stream_kwargs(s["options"], s["cdf"])), None
        except (dk.DkError, ValueError, OSError) as e:
            got, err = None, e
        if s["error_class"]:
            n_err += 1
            if err is None or s["error_class"] not in str(err):
                bad.append((tag, "error %r; Spark: %s" % (err, s["error_class"])))
            elif s["error_class"].endswith("_USE_SCHEMA_LOG") and not (
                    "schemaTrackingLocation" in str(err) and "at version " in str(err)):
                # Spark's remedy is that option; dk has no schema log and says so
                bad.append((tag, "the error does not name schemaTrackingLocation and the "
                                 "version: %s" % err))
            continue
        if err is not None:
            bad.append((tag, "dk failed: %s" % err))
            continue
        _compare_batches(tag, s["batches"], got, bad)
        n_ok += 1
    assert not bad, bad[:10]
    assert n_ok >= 30 and n_err >= 20


def test_streams_resume_from_every_offset(cdf):
    """From each batch's end offset — dk's and the one Spark's checkpoint holds (the same
    JSON) — a new stream hands out exactly the batches after it."""
    bad, resumed = [], 0
    for name, s in _streams(cdf):
        if s["error_class"] or len(s["batches"]) < 2:
            continue
        t = _dk_table(os.path.join(cdf, name, "delta"))
        kw = stream_kwargs(s["options"], s["cdf"])
        for k, b in enumerate(s["batches"][:-1]):
            rk = dict(kw, resume_offset=json.dumps(b["end_offset"]))
            for key in ("starting_version", "starting_timestamp"):
                rk.pop(key, None)
            _compare_batches((name, s["name"], "after batch %d" % k), s["batches"][k + 1:],
                             _run(t, rk), bad)
            resumed += 1
    assert not bad, bad[:10]
    assert resumed >= 40


def test_stream_offsets_of_another_table_or_malformed(cdf):
    import dk
    o = cp.load(cdf, "cdf_stream")
    t = _dk_table(os.path.join(cdf, "cdf_stream", "delta"))
    other = cp.load(cdf, "cdf_basic")["streams"][0]["batches"][0]["end_offset"]
    with pytest.raises(dk.InvalidArgument, match="DIFFERENT_DELTA_TABLE"):
        t.stream(resume_offset=json.dumps(other))
    for bad in ("{", "[]", '{"sourceVersion":1}', json.dumps(dict(
            o["streams"][0]["batches"][0]["end_offset"], index="x"))):
        with pytest.raises(dk.InvalidArgument, match="offset"):
            t.stream(resume_offset=bad)


def test_live_stream_fails_at_the_schema_change(cdf, tmp_path):
    """cdf_live: Spark's stream (startingVersion 0) read versions 0..2, then a column was
    added (v3) and a row written with it (v4): the stream failed at v3. dk's stream on a
    copy holding only versions 0..2 hands out Spark's batch, then fails when v3 and v4
    appear."""
    import dk
    o = cp.load(cdf, "cdf_live")
    s = o["streams"][0]
    before = s["phases"]["before"]
    src = os.path.join(cdf, "cdf_live", "delta")
    dst = str(tmp_path / "live")
    shutil.copytree(src, dst, ignore=lambda d, names: [
        n for n in names if d.endswith("_delta_log") and n[:20].isdigit() and
        int(n[:20]) > before])
    t = dk.Table(dst)
    st = t.stream(starting_version=0)
    got = [(json.loads(off), pa.table(b)) for off, b in st]
    _bad = []
    _compare_batches(("cdf_live",), s["batches"], got, _bad)
    assert not _bad, _bad
    for n in sorted(os.listdir(os.path.join(src, "_delta_log"))):
        if n[:20].isdigit() and int(n[:20]) > before:
            shutil.copy2(os.path.join(src, "_delta_log", n), os.path.join(dst, "_delta_log", n))
    with pytest.raises(dk.UnsupportedFeature, match=s["error_class"]) as e:
        list(st)
    assert "version %d" % (before + 1) in str(e.value)
