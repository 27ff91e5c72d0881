"""Random row-level DML cases for test_spark_dml.py: a table (partitioned or not, deletion vectors
on or off, column mapping, row tracking, change data feed) written by Spark, then a sequence of
DELETE / UPDATE / MERGE statements (MERGE with a source of distinct ids, half of them in the
table, registered in Spark as the view dk_merge_source) that Spark runs on one copy and dk on another.

Everything here is deterministic (seeded), so Spark's side can be generated once and cached
(test_spark_dml.py fingerprints this file). Predicates and expressions are written in the
common subset of Spark SQL and dk's grammar."""
import random

N_CASES = 24          # the full matrix (DK_DML_CASES=all)
SAMPLE = 8            # what `make test` runs (the first SAMPLE cases cover every feature)
SEED = 20261201

COLUMNS = [("id", "long"), ("k", "int"), ("s", "string"), ("d", "double"), ("p", "string")]


def _rows(rng, first, n):
    out = []
    for i in range(first, first + n):
        s = None if rng.random() < 0.1 else "s%d" % rng.randrange(100)
        d = None if rng.random() < 0.05 else round(rng.uniform(-100, 100), 3)
        p = rng.choice(["a", "b", "c", None]) if rng.random() < 0.97 else None
        out.append((i, i % 7, s, d, p))
    return out


def _pred(rng, n_rows, partitioned):
    x = rng.randrange(n_rows)
    choices = [
        "id < %d" % (x // 4),
        "k = %d" % rng.randrange(7),
        "s IS NULL",
        "id >= %d AND id < %d" % (x, x + rng.randrange(1, 200)),
        "d > %d OR k IN (1, 2)" % rng.randrange(-50, 90),
        "s LIKE 's1%'",
        "id = %d" % x,
        "id > %d AND d IS NOT NULL" % (n_rows - rng.randrange(1, 300)),
        "id < 0",  # matches nothing: no commit on either side
    ]
    if partitioned:
        choices += ["p = 'b'", "p IS NULL", "p = 'a' AND id > %d" % x, "p IN ('a', 'c') AND k = 3"]
    return rng.choice(choices)


def _update(rng, partitioned):
    """SET assignments (column -> expression) in the common subset of Spark SQL and dk."""
    choices = [
        {"d": "d * 2"},
        {"s": "upper(s)", "k": "k + 1"},
        {"s": "concat(s, '_u')"},
        {"s": "CASE WHEN k > 3 THEN 'big' ELSE s END", "d": "coalesce(d, 0) + k"},
        {"d": "round(d / 3, 2)"},
        {"s": "NULL", "k": "-k"},
        {"id": "id + 1000000"},
    ]
    if partitioned:
        choices += [{"p": "'c'"}, {"p": "CASE WHEN k = 1 THEN NULL ELSE 'a' END", "d": "abs(d)"}]
    return rng.choice(choices)


# MERGE clause lists: (when, action, condition, {column: expression} or None, all), in the order
# Spark's grammar wants them (MATCHED, NOT MATCHED, NOT MATCHED BY SOURCE)
_MERGES = [
    [("matched", "update", None, {"d": "s.d", "s": "s.s"}, False),
     ("not_matched", "insert", None, None, True)],
    [("matched", "delete", "s.d > 0", None, False),
     ("matched", "update", None, {"k": "t.k + s.k"}, False)],
    [("matched", "update", "t.k < 3", None, True),
     ("not_matched", "insert", "s.d IS NOT NULL",
      {"id": "s.id", "k": "s.k", "d": "s.d * 10", "p": "s.p"}, False)],
    [("not_matched", "insert", None, None, True)],
    [("matched", "update", None, {"s": "concat(t.s, s.s)"}, False),
     ("nmbs", "delete", "t.k = 4", None, False)],
    [("matched", "delete", None, None, False),
     ("not_matched", "insert", None, None, True),
     ("nmbs", "update", "t.id < 100", {"s": "'gone'"}, False)],
]


def _merge(rng, total, which=None):
    """A source of distinct ids, half of them in the table, and a clause list."""
    n = rng.choice([20, 100, 400])
    first_new = 10 ** 6 + rng.randrange(10 ** 6)
    ids = rng.sample(range(total), n // 2) + list(range(first_new, first_new + n - n // 2))
    rows = []
    for i in ids:
        s = None if rng.random() < 0.1 else "m%d" % rng.randrange(50)
        d = None if rng.random() < 0.05 else round(rng.uniform(-100, 100), 3)
        rows.append((i, i % 5, s, d, rng.choice(["a", "b", "c", None])))
    return ("merge", rows, _MERGES[which] if which is not None else rng.choice(_MERGES))


def _ops(rng, total, f):
    out = []
    for _ in range(rng.randint(2, 4)):
        r = rng.random()
        if r < 0.35:
            out.append(_merge(rng, total))
        elif r < 0.7:
            out.append(("update", _update(rng, f["partitioned"]), _pred(rng, total, f["partitioned"])))
        else:
            out.append(("delete", _pred(rng, total, f["partitioned"])))
    return out


def cases():
    rng = random.Random(SEED)
    out = []
    # the first cases pin every feature at least once (the sampled run); the rest are random
    pinned = [
        dict(partitioned=True, dvs=True, colmap=None, row_tracking=False, cdf=False),
        dict(partitioned=False, dvs=True, colmap="name", row_tracking=True, cdf=False),
        dict(partitioned=True, dvs=True, colmap=None, row_tracking=True, cdf=True),
        dict(partitioned=False, dvs=True, colmap="id", row_tracking=False, cdf=True),
        dict(partitioned=True, dvs=True, colmap="name", row_tracking=True, cdf=True),
        dict(partitioned=False, dvs=True, colmap=None, row_tracking=False, cdf=False),
        dict(partitioned=True, dvs=False, colmap="name", row_tracking=False, cdf=False),
        dict(partitioned=False, dvs=False, colmap=None, row_tracking=False, cdf=False),
    ]
    for i in range(N_CASES):
        f = pinned[i] if i < len(pinned) else dict(
            partitioned=rng.random() < 0.5, dvs=rng.random() < 0.7,
            colmap=rng.choice([None, None, "name", "id"]), row_tracking=rng.random() < 0.4,
            cdf=rng.random() < 0.4)
        n_rows = rng.choice([300, 1000, 3000])
        appends = [_rows(rng, k * n_rows, n_rows) for k in range(rng.randint(2, 3))]
        total = n_rows * len(appends)
        ops = _ops(rng, total, f)
        # the sampled cases run every MERGE clause list at least once
        ops += {0: [_merge(rng, total, 0), _merge(rng, total, 3), _merge(rng, total, 4)],
                3: [("update", {"d": "d * 2", "s": "upper(s)"}, "k = 2"),
                    _merge(rng, total, 5), _merge(rng, total, 1)],
                5: [_merge(rng, total, 5), _merge(rng, total, 2)]}.get(i, [])
        name = "c%02d_%s%s%s%s%s" % (i, "part_" if f["partitioned"] else "", "dv_" if f["dvs"] else "cow_",
                                     ("cm%s_" % f["colmap"]) if f["colmap"] else "",
                                     "rt_" if f["row_tracking"] else "", "cdf" if f["cdf"] else "")
        out.append(dict(name=name.rstrip("_"), appends=appends, ops=ops, **f))
    return out


def properties(c):
    props = {"delta.enableDeletionVectors": "true" if c["dvs"] else "false"}
    if c["colmap"]:
        props["delta.columnMapping.mode"] = c["colmap"]
    if c["row_tracking"]:
        props["delta.enableRowTracking"] = "true"
    if c["cdf"]:
        props["delta.enableChangeDataFeed"] = "true"
    return props


def spark_sql(op, target):
    kind = op[0]
    if kind == "delete":
        return "DELETE FROM %s WHERE %s" % (target, op[1])
    if kind == "merge":
        sql = ["MERGE INTO %s t USING dk_merge_source s ON t.id = s.id" % target]
        for when, action, cond, sets, all_ in op[2]:
            w = {"matched": "WHEN MATCHED", "not_matched": "WHEN NOT MATCHED",
                 "nmbs": "WHEN NOT MATCHED BY SOURCE"}[when]
            if cond:
                w += " AND " + cond
            if action == "delete":
                w += " THEN DELETE"
            elif action == "update":
                w += " THEN UPDATE SET " + ("*" if all_ else ", ".join(
                    "%s = %s" % kv for kv in sets.items()))
            elif all_:
                w += " THEN INSERT *"
            else:
                w += " THEN INSERT (%s) VALUES (%s)" % (", ".join(sets), ", ".join(sets.values()))
            sql.append(w)
        return " ".join(sql)
    if kind == "update":
        sets = ", ".join("%s = %s" % (c, e) for c, e in op[1].items())
        return "UPDATE %s SET %s WHERE %s" % (target, sets, op[2])
    raise ValueError(kind)


SOURCE_DDL = "id long, k int, s string, d double, p string"
