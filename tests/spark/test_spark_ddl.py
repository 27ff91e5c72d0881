"""DDL through the dk catalog (DkCatalog.alterTable -> dk_table_alter; the history metadata
table dk.`/path`.history), checked against delta-spark in one SparkSession: every ALTER TABLE
runs on a dk table (dk.`/path`) and on a delta-spark table (delta.`/path`) made from the same
statements; after each both tables have the same schema (column-mapping physical names of new
columns aside: both are random `col-<uuid>`), configuration and protocol as delta-rs reads
them, the same rows through delta-spark, dk and delta-rs, and the same DESCRIBE HISTORY fields;
dk's history table lists exactly what delta-spark's DESCRIBE HISTORY lists for the dk table;
the statements delta-spark refuses, dk refuses with the same error class."""
import json
import re

import pytest

from sparkcmp import diff, rows

CREATE = ("CREATE TABLE {t} (id bigint, s struct<x: int>, p string) USING delta PARTITIONED BY (p) "
          "TBLPROPERTIES ('delta.enableDeletionVectors'='false')")

# (statement, rows to insert afterwards or None); both tables take each in turn
STEPS = [
    ("ALTER TABLE {t} ADD COLUMNS (c int COMMENT 'cc', d string)", None),
    ("ALTER TABLE {t} ADD COLUMNS (s.y string)", None),
    ("ALTER TABLE {t} ADD COLUMNS (f int FIRST)", None),
    ("ALTER TABLE {t} ADD COLUMNS (g int AFTER id)",
     "(1, 10, 2, named_struct('x', 3, 'y', 'a'), 'p1', 4, 'd1'), "
     "(NULL, 11, NULL, NULL, NULL, NULL, 'd2')"),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('delta.appendOnly'='true', 'foo'='bar')", None),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('delta.APPENDONLY'='false')", None),
    ("ALTER TABLE {t} UNSET TBLPROPERTIES ('foo')", None),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableChangeDataFeed'='true')", None),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableDeletionVectors'='true')", None),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode'='name')", None),
    ("ALTER TABLE {t} ADD COLUMNS (h map<string, int>)",
     "(5, 12, 6, named_struct('x', 7, 'y', 'b'), 'p2', 8, 'd3', map('k', 1))"),
    ("ALTER TABLE {t} RENAME COLUMN c TO c2", None),
    ("ALTER TABLE {t} RENAME COLUMN s.x TO x2", None),
    ("ALTER TABLE {t} RENAME COLUMN p TO p2", None),
    ("ALTER TABLE {t} DROP COLUMN d",
     "(9, 13, 10, named_struct('x2', 11, 'y', 'c'), 'p1', 12, map('k', 2))"),
    ("ALTER TABLE {t} DROP COLUMNS IF EXISTS (s.y, nosuch)", None),
]

# refused by delta-spark; (statement, the position in STEPS after which it is tried)
REFUSED = [
    ("ALTER TABLE {t} RENAME COLUMN c TO c9", 1),  # no column mapping yet
    ("ALTER TABLE {t} DROP COLUMN c", 1),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('delta.nosuch'='1')", 1),
    ("ALTER TABLE {t} ADD COLUMNS (e int NOT NULL)", 1),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('delta.appendOnly'='maybe')", 1),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('delta.checkpointInterval'='0')", 1),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('delta.logRetentionDuration'='1 month')", 1),
    ("ALTER TABLE {t} DROP COLUMN p2", len(STEPS)),  # a partition column
]

HISTORY_FIELDS = ("version", "operation", "operationParameters", "readVersion",
                  "isolationLevel", "isBlindAppend", "operationMetrics", "userMetadata")


def _meta(path):
    """(schema JSON, partition columns, configuration, protocol) as delta-rs reads them, new
    columns' random physical names made comparable."""
    import deltalake
    t = deltalake.DeltaTable(path)
    m = t.metadata()
    p = t.protocol()
    schema = json.loads(t.schema().to_json())

    def norm(v):
        if isinstance(v, dict):
            return {k: ("col-*" if k == "delta.columnMapping.physicalName" and str(x).startswith("col-")
                        else norm(x)) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v
    proto = (p.min_reader_version, p.min_writer_version, sorted(p.reader_features or []),
             sorted(p.writer_features or []))
    return norm(schema), list(m.partition_columns), dict(m.configuration), proto


def _history(spark, table):
    out = {}
    for r in spark.sql(f"DESCRIBE HISTORY {table}").collect():
        d = r.asDict(recursive=True)
        out[d["version"]] = {k: d[k] for k in HISTORY_FIELDS}
    return out


def _error_class(e):
    m = re.findall(r"\[(DELTA_[A-Z_]+|FIELD_[A-Z_]+)\]", str(e))
    return m[0] if m else str(e).split("\n")[0][:200]


def _check_same(spark, dk_path, delta_path, what):
    import deltalake
    a, b = _meta(dk_path), _meta(delta_path)
    assert a[0] == b[0], f"{what}: schemas differ\n dk:    {a[0]}\n delta: {b[0]}"
    assert a[1:] == b[1:], f"{what}: partitioning / configuration / protocol differ\n dk:    {a[1:]}\n delta: {b[1:]}"
    want = rows(spark.read.format("delta").load(delta_path))
    diff(rows(spark.read.format("delta").load(dk_path)), want, f"{what}: delta-spark reads")
    diff(rows(spark.table(f"dk.`{dk_path}`")), want, f"{what}: dk reads")
    ds, ws = spark.table(f"dk.`{dk_path}`").schema, spark.read.format("delta").load(delta_path).schema
    assert ds == ws, f"{what}: read schemas differ\n dk:    {ds.json()}\n delta: {ws.json()}"

    def rs(p):
        return sorted(repr(sorted(r.items())) for r in deltalake.DeltaTable(p).to_pyarrow_table().to_pylist())
    if "deletionVectors" not in a[3][2]:  # delta-rs 1.x reads no table with DVs (either writer's)
        assert rs(dk_path) == rs(delta_path), f"{what}: delta-rs reads differ"


def test_alter_table_like_delta_spark(spark, tmp_path):
    dk_path, delta_path = str(tmp_path / "dk"), str(tmp_path / "delta")
    dk_t, delta_t = f"dk.`{dk_path}`", f"delta.`{delta_path}`"
    spark.sql(CREATE.format(t=dk_t))
    spark.sql(CREATE.format(t=delta_t))
    spark.sql(f"INSERT INTO {dk_t} VALUES (1, named_struct('x', 1), 'p1'), (2, NULL, NULL)")
    spark.sql(f"INSERT INTO {delta_t} VALUES (1, named_struct('x', 1), 'p1'), (2, NULL, NULL)")
    _check_same(spark, dk_path, delta_path, "created")
    refused = 0
    for i, (stmt, ins) in enumerate(STEPS):
        spark.sql(stmt.format(t=dk_t))
        spark.sql(stmt.format(t=delta_t))
        _check_same(spark, dk_path, delta_path, stmt)
        if ins:
            spark.sql(f"INSERT INTO {dk_t} VALUES {ins}")
            spark.sql(f"INSERT INTO {delta_t} VALUES {ins}")
            _check_same(spark, dk_path, delta_path, stmt + " + INSERT")
        for bad, after in REFUSED:
            if after != i + 1:
                continue
            with pytest.raises(Exception) as want:
                spark.sql(bad.format(t=delta_t))
            with pytest.raises(Exception) as got:
                spark.sql(bad.format(t=dk_t))
            w = _error_class(want.value)
            if w.startswith("requirement failed: "):  # DeltaConfigs' value checks: no class
                assert w[len("requirement failed: "):] in str(got.value), (bad, w, str(got.value)[:400])
            else:
                assert _error_class(got.value) == w, (bad, str(got.value)[:400])
            refused += 1
    assert refused == len(REFUSED)
    # DESCRIBE HISTORY: the ALTER commits agree field by field (versions 0-1 are CREATE and
    # INSERT, whose engines' parameters and metrics differ in ways other tests cover)
    got, want = _history(spark, dk_t.replace("dk.", "delta.", 1)), _history(spark, delta_t)
    assert sorted(got) == sorted(want)
    alters = [v for v in want if want[v]["operation"] not in ("CREATE TABLE", "WRITE")]
    assert len(alters) == len(STEPS)
    for v in alters:
        assert got[v] == want[v], f"version {v}"
    # delta-spark appends to the altered dk table and reads it back the same
    spark.sql(f"INSERT INTO delta.`{dk_path}` SELECT * FROM {delta_t} WHERE id = 9")
    spark.sql(f"INSERT INTO {delta_t} SELECT * FROM {delta_t} WHERE id = 9")
    _check_same(spark, dk_path, delta_path, "delta-spark appends")


def test_history_table_is_describe_history(spark, tmp_path):
    """dk.`/path`.history has DESCRIBE HISTORY's columns and rows (every field, timestamps
    included) for a table written by dk and by delta-spark."""
    p = str(tmp_path / "h")
    t = f"dk.`{p}`"
    spark.sql(f"CREATE TABLE {t} (id bigint, v string) USING delta TBLPROPERTIES ('delta.enableDeletionVectors'='false')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO delta.`{p}` VALUES (3, 'c')")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('k'='v')")
    spark.sql(f"DELETE FROM {t} WHERE id = 1")
    want = spark.sql(f"DESCRIBE HISTORY delta.`{p}`")
    got = spark.sql(f"SELECT * FROM {t}.history")
    assert got.schema == want.schema
    w, g = [r.asDict(recursive=True) for r in want.collect()], [r.asDict(recursive=True) for r in got.collect()]
    assert len(w) == 5
    assert g == w
    # LIMIT n: the newest n commits, timed as DESCRIBE HISTORY LIMIT n times them
    for n in (1, 3):
        want = [r.asDict(recursive=True) for r in spark.sql(f"DESCRIBE HISTORY delta.`{p}` LIMIT {n}").collect()]
        assert [r.asDict(recursive=True) for r in spark.sql(f"SELECT * FROM {t}.history LIMIT {n}").collect()] == want
    # it is a table: filters and projections run on it
    assert [r[0] for r in spark.sql(f"SELECT version FROM {t}.history WHERE operation = 'WRITE' "
                                    "ORDER BY version").collect()] == [1, 2]
    with pytest.raises(Exception):
        spark.sql(f"SELECT * FROM dk.`{tmp_path}/nosuch`.history").collect()


def test_drop_table_like_delta_spark(spark, tmp_path):
    """DROP TABLE of a path table: delta-spark succeeds and deletes nothing (the table stays
    readable, every file kept); a missing one is TABLE_OR_VIEW_NOT_FOUND, unless IF EXISTS."""
    import os

    def files(p):
        return sorted(os.path.relpath(os.path.join(r, f), p) for r, _, fs in os.walk(p) for f in fs
                      if not f.endswith(".crc"))
    for kind in ("dk", "delta"):
        p = str(tmp_path / kind)
        t = f"{kind}.`{p}`"
        spark.sql(f"CREATE TABLE {t} (id bigint) USING delta")
        spark.sql(f"INSERT INTO {t} VALUES (1), (2)")
        before = files(p)
        spark.sql(f"DROP TABLE {t}")
        spark.sql(f"DROP TABLE IF EXISTS {t}")
        assert files(p) == before, kind
        assert sorted(r[0] for r in spark.read.format("delta").load(p).collect()) == [1, 2]
        missing = f"{kind}.`{tmp_path}/nosuch`"
        with pytest.raises(Exception) as e:
            spark.sql(f"DROP TABLE {missing}")
        assert "TABLE_OR_VIEW_NOT_FOUND" in str(e.value), (kind, str(e.value)[:300])
        spark.sql(f"DROP TABLE IF EXISTS {missing}")


UPGRADES = [
    "'delta.minReaderVersion'='2', 'delta.minWriterVersion'='5'",
    "'delta.minWriterVersion'='4'",
    "'delta.enableInCommitTimestamps'='true'",
    "'delta.checkpointPolicy'='v2'",
    "'delta.enableTypeWidening'='true'",
    "'delta.enableRowTracking'='true'",  # an empty table: no backfill needed
    "'delta.feature.domainMetadata'='supported'",
]


@pytest.mark.parametrize("props", UPGRADES)
def test_protocol_upgrade_like_delta_spark(spark, tmp_path, props):
    """One SET TBLPROPERTIES on a fresh (1,2) table: the same protocol, configuration (ICT's
    enablement version aside from its timestamp) and history parameters as delta-spark's."""
    dk_path, delta_path = str(tmp_path / "dk"), str(tmp_path / "delta")
    for t in (f"dk.`{dk_path}`", f"delta.`{delta_path}`"):
        spark.sql(f"CREATE TABLE {t} (id bigint) USING delta "
                  "TBLPROPERTIES ('delta.enableDeletionVectors'='false')")
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ({props})")
    a, b = _meta(dk_path), _meta(delta_path)
    for m in (a, b):
        m[2].pop("delta.inCommitTimestampEnablementTimestamp", None)
        for k in [k for k in m[2] if k.startswith("delta.rowTracking.materialized")]:
            m[2][k] = "*"  # random names
    assert a == b, f"dk:    {a}\ndelta: {b}"
    h1, h2 = _history(spark, f"delta.`{dk_path}`"), _history(spark, f"delta.`{delta_path}`")
    if "enableRowTracking" in props:
        # delta-spark commits UPGRADE PROTOCOL first, then the property; dk both at once
        assert [h2[v]["operation"] for v in sorted(h2)][1:] == ["UPGRADE PROTOCOL", "SET TBLPROPERTIES"]
        assert h1[1]["operationParameters"] == h2[2]["operationParameters"]
    else:
        assert h1[1] == h2[1]


def test_session_catalog_using_dk(spark, tmp_path):
    """spark_catalog = DkSessionCatalog (a new session of the same JVM): CREATE TABLE ... USING
    dk LOCATION, INSERT, ALTER TABLE, SELECT and DROP TABLE by name, against the same statements
    USING delta in delta-spark's session catalog."""
    import os
    s2 = spark.newSession()
    s2.conf.set("spark.sql.catalog.spark_catalog", "io.dk.spark.DkSessionCatalog")
    dk_path, delta_path = str(tmp_path / "dk"), str(tmp_path / "delta")
    for sess, name, using, loc in ((s2, "dk_named", "dk", dk_path),
                                   (spark, "delta_named", "delta", delta_path)):
        sess.sql(f"CREATE TABLE {name} (id bigint, p string) USING {using} PARTITIONED BY (p) "
                 f"LOCATION '{loc}' TBLPROPERTIES ('delta.enableDeletionVectors'='false')")
        sess.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
        sess.sql(f"ALTER TABLE {name} ADD COLUMNS (c int COMMENT 'x')")
        sess.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('k'='v')")
        sess.sql(f"INSERT INTO {name} VALUES (3, 'a', 30)")
    diff(rows(s2.table("dk_named")), rows(spark.table("delta_named")), "by name")
    a, b = _meta(dk_path), _meta(delta_path)
    assert a == b, f"dk:    {a}\ndelta: {b}"
    assert s2.table("dk_named").schema == spark.table("delta_named").schema
    h1, h2 = _history(spark, f"delta.`{dk_path}`"), _history(spark, f"delta.`{delta_path}`")
    assert [h1[v]["operation"] for v in sorted(h1)] == [h2[v]["operation"] for v in sorted(h2)]
    for v in (2, 3):
        assert h1[v] == h2[v]
    eng = [r[0] for r in spark.sql(f"DESCRIBE HISTORY delta.`{dk_path}`").select("engineInfo").collect()]
    assert all("dk-spark" in e for e in eng), eng  # dk wrote every commit
    before = sorted(os.listdir(dk_path))
    s2.sql("DROP TABLE dk_named")
    spark.sql("DROP TABLE delta_named")
    assert sorted(os.listdir(dk_path)) == before  # external: the files stay
    assert os.path.exists(os.path.join(delta_path, "_delta_log"))
    # other providers stay the delegate's
    s2.sql(f"CREATE TABLE pq_named (id int) USING parquet LOCATION '{tmp_path}/pq'")
    s2.sql("INSERT INTO pq_named VALUES (7)")
    assert [r[0] for r in s2.table("pq_named").collect()] == [7]
    s2.sql("DROP TABLE pq_named")
