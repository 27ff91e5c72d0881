#!/usr/bin/env python3
"""Spark SQL answers for `dk sql` (issue #5): filtered and aggregated queries and `_metadata`
columns, run by Spark SQL over the interop tables, written as OUTDIR/<name>/sql_oracle.json.

Usage: sql_oracle.py OUTDIR [NAME ...]   (build.py calls dump() in its SparkSession)

Each query is a pair: the Spark SQL text and the equivalent SQLite text for `dk sql`
(`{t}` is ``delta.`root` `` for Spark and `delta_scan('root')` for dk). The dialects differ
only where dk sql's value mapping requires it (see tests/interop/README.md, "SQL queries"):
date/timestamp literals are ISO text, decimals are TEXT (`p_dec = '3.14'`, numeric order via
`CAST(x AS REAL)`), booleans are 0/1, `_metadata.x` is the hidden column `_x` (`_file_name`,
`_row_id`, ...). Spark's case-sensitive `LIKE 'x%'` is asked twice: as SQLite's LIKE (ASCII
case-insensitive, same answer on these data) and as its exact twin `GLOB 'x*'`.
A table's sql_oracle.json is redone when its query list changes (`spec_sha`).
"""
import hashlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SQL_ORACLE_FORMAT = "dk-interop-sql/1"

# A query: (name, spark_sql, sqlite_sql or None (= the Spark text), expect), where expect lists
# what dk's --stats must show: "partition" (files pruned by partition values), "stats" (files
# pruned by statistics), "limit" (files pruned by LIMIT), "fewer" (files_selected <
# files_total by any means). Queries whose name starts with "limit" carry a LIMIT without
# ORDER BY: any rows of the unlimited query are a right answer, so Spark also answers the
# query without its LIMIT clause (the superset).
Q = {
    "appends": [
        ("f_range", "SELECT id, k, s, d FROM {t} WHERE id >= 100 AND id < 250", None, ["stats"]),
        ("f_in", "SELECT id, s FROM {t} WHERE id IN (5, 505, 1005)", None, ["stats"]),
        ("f_like", "SELECT id, s FROM {t} WHERE s LIKE 's10%'", None, []),
        ("f_glob", "SELECT id, s FROM {t} WHERE s LIKE 's10%'",
         "SELECT id, s FROM {t} WHERE s GLOB 's10*'", []),
        ("f_mixed", "SELECT id, k FROM {t} WHERE k = 3 AND id < 300", None, ["stats"]),
        ("f_is_null", "SELECT id FROM {t} WHERE s IS NULL", None, ["stats"]),
        ("f_or", "SELECT id, k FROM {t} WHERE id < 10 OR id > 1090 OR id IN (500, 501)", None,
         ["stats"]),
        ("limit_k", "SELECT id, k FROM {t} WHERE k = 2 LIMIT 7", None, []),
        ("limit_all", "SELECT id, s FROM {t} LIMIT 7", None, ["limit"]),
        ("a_count", "SELECT count(*) AS n FROM {t}", None, []),
        ("a_aggs", "SELECT count(*) AS n, sum(id) AS sum_id, min(d) AS min_d, max(d) AS max_d, "
                   "avg(d) AS avg_d FROM {t} WHERE id < 555", None, ["stats"]),
        ("a_group", "SELECT k, count(*) AS n, sum(id) AS sum_id, min(s) AS min_s, "
                    "max(s) AS max_s, avg(id) AS avg_id FROM {t} GROUP BY k", None, []),
    ],
    "dml": [
        ("f_null", "SELECT id, grp, s, amount FROM {t} WHERE grp IS NULL", None, ["stats"]),
        ("f_in", "SELECT id, grp, amount FROM {t} WHERE grp IN (0, 2) AND id < 1110", None,
         ["stats"]),
        ("f_like", "SELECT id, s FROM {t} WHERE s LIKE 'rw-11%'", None, []),
        ("f_glob", "SELECT id, s FROM {t} WHERE s LIKE 'rw-11%'",
         "SELECT id, s FROM {t} WHERE s GLOB 'rw-11*'", ["stats"]),
        ("f_empty", "SELECT id, grp, s, amount FROM {t} WHERE s = ''", None, ["stats"]),
        ("f_dec_eq", "SELECT id, amount FROM {t} WHERE amount = 0.00",
         "SELECT id, amount FROM {t} WHERE amount = '0.00'", ["stats"]),
        ("f_dec_lt", "SELECT id, amount FROM {t} WHERE amount < -1140",
         "SELECT id, amount FROM {t} WHERE CAST(amount AS REAL) < -1140", []),
        ("limit_grp", "SELECT id, s FROM {t} WHERE grp = 1 LIMIT 4", None, []),
        ("a_aggs", "SELECT count(*) AS n, count(grp) AS n_grp, sum(amount) AS sum_amount, "
                   "min(amount) AS min_amount, max(amount) AS max_amount, "
                   "avg(amount) AS avg_amount FROM {t}",
         "SELECT count(*) AS n, count(grp) AS n_grp, sum(amount) AS sum_amount, "
         "min(CAST(amount AS REAL)) AS min_amount, max(CAST(amount AS REAL)) AS max_amount, "
         "avg(amount) AS avg_amount FROM {t}", []),
        ("a_group", "SELECT grp, count(*) AS n, sum(id) AS sum_id, max(s) AS max_s, "
                    "sum(amount) AS sum_amount FROM {t} GROUP BY grp", None, []),
    ],
    "partitioned": [
        ("f_part_str", "SELECT id, v, p_str, p_int FROM {t} WHERE p_str = 'a b'", None,
         ["partition"]),
        ("f_part_in", "SELECT id, p_str FROM {t} WHERE p_str IN ('a/b', 'a=b', 'a%b')", None,
         ["partition"]),
        ("f_part_null", "SELECT id, p_str, p_bool FROM {t} WHERE p_str IS NULL", None,
         ["partition"]),
        ("f_part_like", "SELECT id, p_str FROM {t} WHERE p_str LIKE 'a%'", None, ["partition"]),
        ("f_part_date", "SELECT id, p_date FROM {t} WHERE p_date = DATE'2024-02-29'",
         "SELECT id, p_date FROM {t} WHERE p_date = '2024-02-29'", ["partition"]),
        ("f_part_ts", "SELECT id, p_ts FROM {t} WHERE p_ts > TIMESTAMP'1999-01-01 00:00:00'",
         "SELECT id, p_ts FROM {t} WHERE p_ts > '1999-01-01'", ["partition"]),
        ("f_part_bool", "SELECT id, p_bool FROM {t} WHERE p_bool = true",
         "SELECT id, p_bool FROM {t} WHERE p_bool = 1", ["partition"]),
        ("f_part_dec", "SELECT id, p_dec FROM {t} WHERE p_dec = 3.14",
         "SELECT id, p_dec FROM {t} WHERE p_dec = '3.14'", ["partition"]),
        ("f_part_int_null", "SELECT id, p_int FROM {t} WHERE p_int IS NULL", None,
         ["partition"]),
        ("f_mixed", "SELECT id, v, p_int FROM {t} WHERE p_int = 0 AND id > 50", None,
         ["partition"]),
        ("f_data", "SELECT id, v, p_str, p_int, p_date, p_ts, p_bool, p_dec FROM {t} "
                   "WHERE v = 'v77'", None, ["stats"]),
        ("limit_part", "SELECT id, p_int FROM {t} WHERE p_int = 0 LIMIT 3", None,
         ["partition", "limit"]),
        ("a_count_part", "SELECT count(*) AS n FROM {t} WHERE p_str = 'plain'", None,
         ["partition"]),
        ("a_group_part", "SELECT p_int, count(*) AS n, min(id) AS min_id, max(id) AS max_id "
                         "FROM {t} GROUP BY p_int", None, []),
        ("a_group_two", "SELECT p_bool, p_date, count(*) AS n, sum(id) AS sum_id FROM {t} "
                        "GROUP BY p_bool, p_date", None, []),
        ("a_group_data", "SELECT p_dec, count(*) AS n, max(v) AS max_v FROM {t} "
                         "WHERE id < 100 GROUP BY p_dec", None, []),
    ],
    "ckpt_multipart": [
        ("f_part", "SELECT id, part, s FROM {t} WHERE part = 2", None, ["partition"]),
        ("f_part_in", "SELECT id, part FROM {t} WHERE part IN (0, 3)", None, ["partition"]),
        ("f_mixed", "SELECT id, part FROM {t} WHERE part = 1 AND id > 100", None,
         ["partition"]),
        ("a_group", "SELECT part, count(*) AS n, sum(id) AS sum_id, min(s) AS min_s, "
                    "max(id) AS max_id FROM {t} GROUP BY part", None, []),
    ],
    "dv": [
        ("f_part", "SELECT id, s FROM {t} WHERE part = 0 AND id < 100", None, ["partition"]),
        ("f_str", "SELECT id, part FROM {t} WHERE s = 'updated'", None, ["stats"]),
        ("f_in", "SELECT id, part, s FROM {t} WHERE id IN (1, 2, 3, 500, 1001, 1002)", None,
         ["stats"]),
        ("limit_part", "SELECT id FROM {t} WHERE part = 1 LIMIT 5", None, ["partition", "limit"]),
        ("f_or", "SELECT id, part FROM {t} WHERE id < 20 OR (part = 1 AND id > 1090)", None,
         []),
        ("a_group", "SELECT part, count(*) AS n, sum(id) AS sum_id, min(id) AS min_id, "
                    "max(id) AS max_id FROM {t} GROUP BY part", None, []),
        ("m_file", "SELECT id, _metadata.file_name AS file_name, "
                   "_metadata.file_size AS file_size FROM {t} WHERE id < 30",
         "SELECT id, _file_name AS file_name, _file_size AS file_size FROM {t} WHERE id < 30",
         ["stats"]),
        ("m_group_file", "SELECT _metadata.file_name AS file_name, count(*) AS n FROM {t} "
                         "GROUP BY _metadata.file_name",
         "SELECT _file_name AS file_name, count(*) AS n FROM {t} GROUP BY _file_name", []),
    ],
    "deltars": [
        ("f_part", "SELECT id, name, val, day FROM {t} WHERE cat = 'blue ü'", None,
         ["partition"]),
        ("f_null", "SELECT id, cat FROM {t} WHERE name IS NULL", None, ["stats"]),
        ("f_mixed", "SELECT id, name FROM {t} WHERE cat = 'red' AND day = DATE'2024-01-05'",
         "SELECT id, name FROM {t} WHERE cat = 'red' AND day = '2024-01-05'", ["partition"]),
        ("a_group", "SELECT cat, count(*) AS n, avg(val) AS avg_val, min(day) AS min_day, "
                    "max(day) AS max_day FROM {t} GROUP BY cat", None, []),
        ("a_group_data", "SELECT day, count(*) AS n, sum(val) AS sum_val FROM {t} "
                         "WHERE cat = 'green' GROUP BY day", None, ["partition"]),
    ],
    "colmap_name": [
        ("f_part", "SELECT id, a, b_renamed, st, c, p_renamed FROM {t} "
                   "WHERE p_renamed = 'p=two'", None, ["partition"]),
        ("f_nested", "SELECT id, st FROM {t} WHERE st.y_renamed = 'new'",
         "SELECT id, st FROM {t} WHERE st ->> '$.y_renamed' = 'new'", []),
        ("a_group", "SELECT p_renamed, count(*) AS n, count(c) AS n_c, sum(b_renamed) AS s "
                    "FROM {t} GROUP BY p_renamed", None, []),
    ],
    "all_types": [
        ("f_ts", "SELECT id, ts, ntz, da FROM {t} WHERE ts < TIMESTAMP'2001-01-01 00:00:00'",
         "SELECT id, ts, ntz, da FROM {t} WHERE ts < '2001-01-01'", ["stats"]),
        ("f_ntz", "SELECT id, ntz FROM {t} WHERE ntz >= TIMESTAMP_NTZ'2000-01-05 00:00:00'",
         "SELECT id, ntz FROM {t} WHERE ntz >= '2000-01-05'", ["stats"]),
        ("f_dec9", "SELECT id, dec9, dec38 FROM {t} WHERE dec9 = -298.500",
         "SELECT id, dec9, dec38 FROM {t} WHERE dec9 = '-298.500'", ["stats"]),
        ("f_like", "SELECT id, s FROM {t} WHERE s LIKE 'str-1%'", None, []),
        ("f_glob", "SELECT id, s FROM {t} WHERE s LIKE 'str-1%'",
         "SELECT id, s FROM {t} WHERE s GLOB 'str-1*'", []),
        ("f_null", "SELECT id, s, bin FROM {t} WHERE s IS NULL", None, ["stats"]),
        ("f_bool", "SELECT id, bo, by, sh, i, l FROM {t} WHERE bo = false AND id > 280",
         "SELECT id, bo, by, sh, i, l FROM {t} WHERE bo = 0 AND id > 280", []),
        ("f_nested", "SELECT id, st, arr, m FROM {t} WHERE id < 4 OR id >= 1000", None, []),
        ("f_or_overlap", "SELECT id, by FROM {t} WHERE id < 10 OR id < 20 OR by < 0", None, []),
        ("f_float", "SELECT id, f, d FROM {t} WHERE id IN (7, 100, 299, 1000, 1001, 1002)",
         None, []),
        ("a_aggs", "SELECT count(*) AS n, count(s) AS n_s, sum(l) AS sum_l, min(i) AS min_i, "
                   "max(by) AS max_by, avg(d) AS avg_d, sum(dec9) AS sum_dec9, "
                   "min(da) AS min_da, max(ts) AS max_ts FROM {t} WHERE id < 300",
         None, []),
        ("a_group", "SELECT bo, count(*) AS n, min(ts) AS min_ts, max(da) AS max_da, "
                    "sum(sh) AS sum_sh FROM {t} GROUP BY bo", None, []),
    ],
    "row_tracking": [
        ("m_all", "SELECT id, s, _metadata.file_name AS file_name, _metadata.row_id AS row_id, "
                  "_metadata.row_commit_version AS row_commit_version FROM {t}",
         "SELECT id, s, _file_name AS file_name, _row_id AS row_id, "
         "_row_commit_version AS row_commit_version FROM {t}", []),
        ("m_updated", "SELECT id, _metadata.row_id AS row_id, "
                      "_metadata.row_commit_version AS row_commit_version FROM {t} "
                      "WHERE s = 'upd'",
         "SELECT id, _row_id AS row_id, _row_commit_version AS row_commit_version FROM {t} "
         "WHERE s = 'upd'", ["stats"]),
        ("m_rowid_lt", "SELECT id, _metadata.row_id AS row_id FROM {t} "
                       "WHERE _metadata.row_id < 25",
         "SELECT id, _row_id AS row_id FROM {t} WHERE _row_id < 25", []),
        ("m_group", "SELECT _metadata.row_commit_version AS v, count(*) AS n, "
                    "min(_metadata.row_id) AS lo, max(_metadata.row_id) AS hi FROM {t} "
                    "GROUP BY _metadata.row_commit_version",
         "SELECT _row_commit_version AS v, count(*) AS n, min(_row_id) AS lo, "
         "max(_row_id) AS hi FROM {t} GROUP BY _row_commit_version", []),
    ],
    "row_tracking_dv": [
        ("m_all", "SELECT id, s, _metadata.file_name AS file_name, _metadata.row_id AS row_id, "
                  "_metadata.row_commit_version AS row_commit_version FROM {t}",
         "SELECT id, s, _file_name AS file_name, _row_id AS row_id, "
         "_row_commit_version AS row_commit_version FROM {t}", []),
        ("m_filtered", "SELECT id, _metadata.row_id AS row_id, "
                       "_metadata.row_commit_version AS row_commit_version FROM {t} "
                       "WHERE id >= 150 AND id < 175",
         "SELECT id, _row_id AS row_id, _row_commit_version AS row_commit_version FROM {t} "
         "WHERE id >= 150 AND id < 175", ["stats"]),
        ("m_group", "SELECT _metadata.row_commit_version AS v, count(*) AS n, "
                    "sum(_metadata.row_id) AS sum_row_id FROM {t} "
                    "GROUP BY _metadata.row_commit_version",
         "SELECT _row_commit_version AS v, count(*) AS n, sum(_row_id) AS sum_row_id FROM {t} "
         "GROUP BY _row_commit_version", []),
    ],
}


def spec_sha(name):
    return hashlib.sha256(json.dumps(Q.get(name, []), sort_keys=True).encode()).hexdigest()[:16]


def oracle_path(outdir, name):
    return os.path.join(outdir, name, "sql_oracle.json")


def stale(outdir, names=None):
    """Tables with queries whose sql_oracle.json is missing or was written for other queries."""
    out = []
    for name in Q:
        if names and name not in names:
            continue
        try:
            with open(oracle_path(outdir, name), encoding="utf-8") as f:
                if json.load(f).get("spec_sha") == spec_sha(name):
                    continue
        except (OSError, ValueError):
            pass
        out.append(name)
    return out


def _strip_limit(sql):
    i = sql.upper().rindex(" LIMIT ")
    return sql[:i]


def dump_table(spark, outdir, name):
    import dump_oracle as d
    root = os.path.join(outdir, name, "delta")
    tref = "delta.`%s`" % root
    queries = []
    for qname, spark_sql, sqlite_sql, expect in Q[name]:
        text = spark_sql.format(t=tref)
        df = spark.sql(text)
        rows, metrics = d.scan_metrics(df)
        e = {"name": qname, "spark_sql": spark_sql,
             "sqlite_sql": sqlite_sql if sqlite_sql is not None else spark_sql,
             "expect": expect,
             "columns": [[f.name, f.dataType.jsonValue()] for f in df.schema.fields],
             "rows": [json.loads(r) for r in rows],
             "files_scanned": metrics.get("numFiles"), "scan_metrics": metrics}
        if qname.startswith("limit"):
            e["superset_rows"] = [json.loads(r) for r in
                                  d.encode_rows(spark.sql(_strip_limit(text)))]
        queries.append(e)
    from sparkenv import versions
    out = {"format": SQL_ORACLE_FORMAT, "table": name, "table_root": "delta",
           "spec_sha": spec_sha(name), "tools": versions(), "queries": queries}
    p = oracle_path(outdir, name)
    with open(p + ".tmp", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
    os.replace(p + ".tmp", p)


def dump(spark, outdir, names=None, log=print):
    timings = {}
    for name in stale(outdir, names):
        if not os.path.exists(os.path.join(outdir, name, "DONE")):
            raise RuntimeError("table %s not generated (run gen_tables.py first)" % name)
        t0 = time.time()
        dump_table(spark, outdir, name)
        timings[name] = round(time.time() - t0, 2)
        log(f"sql oracle {name}: {timings[name]}s")
    return timings


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = os.path.abspath(argv[1])
    names = set(argv[2:]) or None
    if not stale(outdir, names):
        print("sql oracle: up to date")
        return 0
    from sparkenv import get_spark
    t0 = time.time()
    spark = get_spark("dk-interop-sql")
    t1 = time.time()
    dump(spark, outdir, names)
    print(f"sql oracle: start {t1 - t0:.1f}s, queries {time.time() - t1:.1f}s")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
