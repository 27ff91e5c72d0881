"""Spark's side of the DML interop cases (dml_cases.py), generated once and cached.

For each case, in OUTDIR/<case>/:
  base/      the table as Spark wrote it (CREATE + appends); dk's copy starts from it
  spark/     a copy on which Spark + delta-spark ran the case's statements
  expected.json  what Spark reads from its own copy: the rows of every version from the base
             version on, the version after each statement, each commit's operation and
             operationMetrics, the change data feed over the statements' commits (CDF cases)
             and _metadata.row_id / row_commit_version at every version (row tracking cases)
  DONE       written last

The cache is per machine, not per build directory, so that CI's clean clones reuse it: OUTDIR is
$DK_DML_ORACLE_DIR, else ~/.cache/dk/dml_oracle/<fingerprint> ($XDG_CACHE_HOME respected), where
the fingerprint hashes dml_cases.py, this file and the Spark pins; a change to any of them makes
a new directory (older ones unused for 14 days are deleted). Building a case holds a lock on
OUTDIR, so concurrent test runs build each case once. Tests copy a case before writing to it."""
import hashlib
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INPUTS = [os.path.join(HERE, "dml_cases.py"), os.path.abspath(__file__),
          os.path.join(REPO, "tests", "interop", "sparkenv.py"),
          os.path.join(REPO, "tests", "interop", "requirements.txt")]


def oracle_dir():
    if os.environ.get("DK_DML_ORACLE_DIR"):
        return os.environ["DK_DML_ORACLE_DIR"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "dk", "dml_oracle", fingerprint())


def fingerprint():
    h = hashlib.sha256()
    for p in INPUTS:
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:32]


def prepare(out):
    """Clears OUTDIR when it holds another fingerprint's cases (a DK_DML_ORACLE_DIR reused
    across changes), drops other fingerprints' caches unused for 14 days; returns OUTDIR."""
    fp = fingerprint()
    fpf = os.path.join(out, "FINGERPRINT")
    if os.path.exists(fpf) and open(fpf).read().strip() != fp:
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    with open(fpf, "w") as f:
        f.write(fp)
    parent = os.path.dirname(os.path.abspath(out))
    if not os.environ.get("DK_DML_ORACLE_DIR"):
        import time
        for d in os.listdir(parent):
            other = os.path.join(parent, d)
            if other != os.path.abspath(out) and os.path.isdir(other) and \
                    time.time() - os.path.getmtime(other) > 14 * 86400:
                shutil.rmtree(other, ignore_errors=True)
    os.utime(out)
    return out


def norm(v):
    if isinstance(v, float) and v != v:
        return "NaN"
    return v


def read_rows(spark, root, version, cols):
    df = spark.read.format("delta").option("versionAsOf", version).load(root)
    return sorted([[norm(r[c]) for c in cols] for r in df.select(*cols).collect()],
                  key=json.dumps)


def read_row_tracking(spark, root, version):
    df = spark.read.format("delta").option("versionAsOf", version).load(root)
    got = df.select("id", "_metadata.row_id", "_metadata.row_commit_version").collect()
    return sorted([[r[0], r[1], r[2]] for r in got])


def read_cdf(spark, root, start, end, cols):
    df = (spark.read.format("delta").option("readChangeFeed", "true")
          .option("startingVersion", start).option("endingVersion", end).load(root))
    got = df.select(*cols, "_change_type", "_commit_version").collect()
    return sorted([[norm(x) for x in r] for r in got], key=json.dumps)


def commit_info(root, v):
    with open(os.path.join(root, "_delta_log", "%020d.json" % v)) as f:
        for line in f:
            a = json.loads(line)
            if "commitInfo" in a:
                ci = a["commitInfo"]
                return {"operation": ci.get("operation"),
                        "operationMetrics": ci.get("operationMetrics", {})}
    return {}


def latest_version(root):
    log = os.path.join(root, "_delta_log")
    return max(int(n[:20]) for n in os.listdir(log) if n.endswith(".json") and n[:20].isdigit())


def create_base(spark, c, root):
    from pyspark.sql.types import (DoubleType, IntegerType, LongType, StringType, StructField,
                                   StructType)
    import dml_cases
    props = ", ".join("'%s' = '%s'" % kv for kv in sorted(dml_cases.properties(c).items()))
    cols = ", ".join("%s %s" % (n, t) for n, t in dml_cases.COLUMNS)
    spark.sql("CREATE TABLE delta.`%s` (%s) USING delta %s TBLPROPERTIES (%s)" %
              (root, cols, "PARTITIONED BY (p)" if c["partitioned"] else "", props))
    schema = StructType([StructField("id", LongType()), StructField("k", IntegerType()),
                         StructField("s", StringType()), StructField("d", DoubleType()),
                         StructField("p", StringType())])
    for rows in c["appends"]:
        spark.createDataFrame(rows, schema).repartition(2).write.format("delta").mode(
            "append").save(root)


def build_case(spark, c, out):
    """Generates OUTDIR/<case> unless DONE exists (under OUTDIR's lock)."""
    import fcntl
    d = os.path.join(out, c["name"])
    if os.path.exists(os.path.join(d, "DONE")):
        return d
    with open(os.path.join(out, "LOCK"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(d, "DONE")):
            _build_case(spark, c, d)
    return d


def _build_case(spark, c, d):
    import dml_cases
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    base, sp = os.path.join(d, "base"), os.path.join(d, "spark")
    create_base(spark, c, base)
    base_v = latest_version(base)
    shutil.copytree(base, sp)
    versions = []
    for op in c["ops"]:
        if op[0] == "merge":
            spark.createDataFrame(op[1], dml_cases.SOURCE_DDL).createOrReplaceTempView(
                "dk_merge_source")
        spark.sql(dml_cases.spark_sql(op, "delta.`%s`" % sp))
        versions.append(latest_version(sp))
    cols = [n for n, _ in dml_cases.COLUMNS]
    last = latest_version(sp)
    exp = {"base_version": base_v, "versions": versions,
           "rows": {str(v): read_rows(spark, sp, v, cols) for v in range(base_v, last + 1)},
           "commits": {str(v): commit_info(sp, v) for v in range(base_v + 1, last + 1)}}
    if c["cdf"] and last > base_v:
        exp["cdf"] = read_cdf(spark, sp, base_v + 1, last, cols)
    if c["row_tracking"]:
        exp["row_tracking"] = {str(v): read_row_tracking(spark, sp, v)
                               for v in range(base_v, last + 1)}
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(exp, f)
    with open(os.path.join(d, "DONE"), "w") as f:
        f.write("ok\n")
