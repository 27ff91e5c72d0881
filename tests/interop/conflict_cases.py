"""The concurrent-transaction pairs of write-path.md §3, described once for every runner.

A case is (table, winner op, loser op). Both transactions start on the same snapshot (version
N of a fresh copy of the base table), each records what it reads and stages its actions; the
winner commits (N+1), then the loser commits. The outcome is "commit" (the loser was rebased
and landed at N+2) or the name of the conflict delta-spark raised (ConcurrentAppendException,
ConcurrentDeleteReadException, ConcurrentDeleteDeleteException, MetadataChangedException,
ProtocolChangedException, ConcurrentTransactionException, ...).

The runners: conflict_matrix_spark.py (delta-spark's OptimisticTransaction through py4j: the
oracle, cached in conflict_matrix.json) and tests/python/test_txn_conflict_matrix.py (dk).

Base tables (written by Spark, so files carry Spark's stats):
  part   : x long, p string, partitioned by p; one file in p='a' (x 1, 2), one in p='b' (x 8, 9)
  flat   : x long, unpartitioned; one file with x 1, 2 and one with x 8, 9

An op:
  reads   : list of ("pred", SQL)  files matching the predicate are read (txn.filterFiles)
                    ("dyn", value) files of partition p=value (dynamic partition overwrite:
                                   txn.filterFiles(newFiles))
                    ("app", appId) the app's txn version is read (txn.txnVersion)
  remove  : None, or the dataChange flag with which every file the reads returned is removed
  adds    : list of (partition value or None, dataChange)  new (synthetic) files
  meta    : None or {key: value} table properties added to the metadata
  protocol: None or (minReader, minWriter)
  txn     : None or (appId, version)
"""

OPS = {
    # blind append into one partition
    "append_a": dict(adds=[("a", True)]),
    "append_b": dict(adds=[("b", True)]),
    # non-blind append (INSERT INTO t SELECT ... FROM t): reads everything, adds
    "insert_select_a": dict(reads=[("pred", "true")], adds=[("a", True)]),
    # mode=overwrite: reads all files, removes them, adds
    "overwrite": dict(reads=[("pred", "true")], remove=True, adds=[("a", True)]),
    # replaceWhere on a partition predicate
    "replace_where_a": dict(reads=[("pred", "p = 'a'")], remove=True, adds=[("a", True)]),
    "replace_where_b": dict(reads=[("pred", "p = 'b'")], remove=True, adds=[("b", True)]),
    # replaceWhere / DELETE by a data predicate (stats prune to the x 8, 9 file)
    "replace_where_data": dict(reads=[("pred", "x > 5")], remove=True, adds=[("b", True)]),
    "delete_a": dict(reads=[("pred", "p = 'a'")], remove=True),
    "delete_data": dict(reads=[("pred", "x > 5")], remove=True),
    # dynamic partition overwrite of p='a'
    "dynamic_a": dict(reads=[("dyn", "a")], remove=True, adds=[("a", True)]),
    # OPTIMIZE of partition a: dataChange=false rewrite
    "optimize_a": dict(reads=[("pred", "p = 'a'")], remove=False, adds=[("a", False)]),
    # metadata change (a table property outside the allow-list)
    "set_property": dict(meta={"dk.test.prop": "1"}),
    # protocol change (legacy writer 2 -> 3: adds checkConstraints)
    "upgrade_protocol": dict(protocol=(1, 3)),
    # idempotent write of an app (streaming sink style): reads the app's version, sets it
    "txn_app": dict(reads=[("app", "app-1")], txn=("app-1", 1), adds=[("a", True)]),
}

# Ops that make sense on the unpartitioned table ("a"/"b" partitions become no partition).
FLAT_OPS = ["append_a", "insert_select_a", "overwrite", "delete_data", "replace_where_data",
            "set_property", "txn_app"]


def op_for(table, name):
    """The op, with partition values dropped for the unpartitioned table."""
    op = dict(OPS[name])
    if table == "flat":
        op["adds"] = [(None, dc) for _, dc in op.get("adds", [])]
        if name == "optimize_a":
            op["reads"] = [("pred", "true")]
    return op


def cases():
    """(case name, table, winner, loser), every ordered pair of ops."""
    out = []
    for w in OPS:
        for l in OPS:
            out.append(("part/%s/%s" % (w, l), "part", w, l))
    for w in FLAT_OPS:
        for l in FLAT_OPS:
            out.append(("flat/%s/%s" % (w, l), "flat", w, l))
    return out
