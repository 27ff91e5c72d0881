"""Random row-level DML cases for test_spark_dml.py: a table (partitioned or not, deletion vectors
on or off, column mapping, row tracking, change data feed) written by Spark, then a sequence of
DELETE / UPDATE statements that Spark runs on one copy and dk on another.

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


def _ops(rng, total, f):
    # UPDATE does not support row tracking / the change data feed yet: DELETE only there
    can_update = not f["row_tracking"] and not f["cdf"]
    out = []
    for _ in range(rng.randint(2, 4)):
        if can_update and rng.random() < 0.6:
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
    if kind == "update":
        sets = ", ".join("%s = %s" % (c, e) for c, e in op[1].items())
        return "UPDATE %s SET %s WHERE %s" % (target, sets, op[2])
    raise ValueError(kind)
