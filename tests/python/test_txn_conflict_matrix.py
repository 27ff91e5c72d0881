"""dk's conflict decisions for every concurrent pair of tests/interop/conflict_cases.py, compared
with delta-spark's (tests/interop/conflict_matrix.json, produced by conflict_matrix_spark.py
through delta-spark's own OptimisticTransaction; regenerate with scripts/conflict_matrix.sh).

The base tables are built by dk with the same log content that matters to conflict detection
(partition values, per-file stats, versions 0 and 1) as the Spark-written ones; both
transactions start at version 1, the winner commits version 2, then the loser commits: dk
must land (rebased, at version 3) exactly where delta-spark does, and raise the exception
delta-spark raises everywhere else.
"""
import json
import os
import sys

import pytest

from test_py_support import import_dk

dk = import_dk()  # skips this module under an ASan build without LD_PRELOAD

HERE = os.path.dirname(os.path.abspath(__file__))
INTEROP = os.path.join(HERE, "..", "interop")
sys.path.insert(0, INTEROP)

import conflict_cases  # noqa: E402

ORACLE = os.path.join(INTEROP, "conflict_matrix.json")

SCHEMA = {"part": {"type": "struct", "fields": [
    {"name": "x", "type": "long", "nullable": True, "metadata": {}},
    {"name": "p", "type": "string", "nullable": True, "metadata": {}}]},
    "flat": {"type": "struct", "fields": [
        {"name": "x", "type": "long", "nullable": True, "metadata": {}}]}}


def _stats(lo, hi):
    return json.dumps({"numRecords": 2, "minValues": {"x": lo}, "maxValues": {"x": hi},
                       "nullCount": {"x": 0}}, separators=(",", ":"))


def make_base(root, kind):
    """Version 0: create + one file (x 1, 2); version 1: one file (x 8, 9)."""
    os.makedirs(root)
    t = dk.Table(root)
    part = kind == "part"
    x = t.transaction(create=True, operation="WRITE",
                      operation_parameters={"mode": "ErrorIfExists",
                                            "partitionBy": '["p"]' if part else "[]"})
    x.set_metadata(json.dumps(SCHEMA[kind]), ["p"] if part else [],
                   {"delta.enableDeletionVectors": "false"})
    x.add_file(("p=a/" if part else "") + "part-00000-base-a.c000.snappy.parquet",
               {"p": "a"} if part else None, size=730, modification_time=1, stats=_stats(1, 2))
    x.commit()
    x = t.transaction(operation="WRITE", operation_parameters={"mode": "Append",
                                                               "partitionBy": "[]"})
    x.add_file(("p=b/" if part else "") + "part-00000-base-b.c000.snappy.parquet",
               {"p": "b"} if part else None, size=730, modification_time=1, stats=_stats(8, 9))
    x.commit()
    return t


_seq = [0]


def stage(t, x, op):
    """conflict_cases' op on dk's transaction x (mirrors conflict_matrix_spark.Runner.stage)."""
    read = []
    for kind, arg in op.get("reads", []):
        if kind == "pred":
            read += x.read_files(arg)
        elif kind == "dyn":
            read += x.read_partitions([[arg]])
        elif kind == "app":
            x.app_version(arg)
    if op.get("meta"):
        s = t.snapshot(version=x.read_version)
        md = s.metadata
        conf = dict(md["configuration"])
        conf.update(op["meta"])
        x.set_metadata(md["schema_string"], md["partition_columns"], conf, id=md["id"])
    if op.get("protocol"):
        x.set_protocol(*op["protocol"])
    if op.get("txn"):
        x.set_app_version(*op["txn"])
    if op.get("remove") is not None:
        for i in read:
            x.remove_file(i, data_change=bool(op["remove"]))
    for part, dc in op.get("adds", []):
        _seq[0] += 1
        path = ("p=%s/" % part if part else "") + "part-00000-dk-%06d.c000.snappy.parquet" % _seq[0]
        x.add_file(path, {"p": part} if part else None, size=1000, modification_time=1,
                   data_change=dc, stats='{"numRecords":1}')


def run_case(tmp, name, table, w, l):
    root = os.path.join(tmp, name.replace("/", "_"))
    t = make_base(root, table)
    tw = t.transaction(operation="Manual Update")
    tl = t.transaction(operation="Manual Update")
    stage(t, tw, conflict_cases.op_for(table, w))
    stage(t, tl, conflict_cases.op_for(table, l))
    rw = tw.commit()
    try:
        rl = tl.commit()
        return {"outcome": "commit", "version": rl["version"], "winner_version": rw["version"]}
    except dk.ConcurrentModification as e:
        return {"outcome": type(e).__name__, "message": str(e),
                "winner_version": rw["version"], "reported": e.winning_version}


def _oracle():
    if not os.path.exists(ORACLE):
        pytest.skip("no tests/interop/conflict_matrix.json (run scripts/conflict_matrix.sh)")
    with open(ORACLE) as f:
        return json.load(f)


def test_oracle_is_current():
    doc = _oracle()
    import conflict_matrix_spark  # noqa: E402 - only for its fingerprint
    assert doc["fingerprint"] == conflict_matrix_spark.fingerprint(), \
        "conflict_matrix.json is stale: rerun scripts/conflict_matrix.sh"
    assert set(doc["cases"]) == {c[0] for c in conflict_cases.cases()}


def test_conflict_matrix_matches_delta_spark(tmp_path):
    doc = _oracle()
    bad = []
    counts = {}
    for name, table, w, l in conflict_cases.cases():
        want = doc["cases"].get(name)
        if want is None:
            continue
        got = run_case(str(tmp_path), name, table, w, l)
        counts[want["outcome"]] = counts.get(want["outcome"], 0) + 1
        if got["outcome"] != want["outcome"] or got.get("version") != want.get("version") or \
                got["winner_version"] != want["winner_version"]:
            bad.append("%s: dk %s, delta-spark %s" % (name, got, want))
        elif got["outcome"] != "commit":
            # the message names the winning version and the reason, as Spark's does
            assert got["reported"] == want["winner_version"], (name, got)
            assert ("version %d" % want["winner_version"]) in got["message"], (name, got)
            if want.get("error_class"):
                assert want["error_class"].split(".")[0] in got["message"] or \
                    got["outcome"] in ("MetadataChangedException", "ProtocolChangedException",
                                       "ConcurrentTransactionException"), (name, got, want)
    print("conflict matrix: %d cases, outcomes %s" % (sum(counts.values()), counts))
    assert not bad, "\n".join(bad)
