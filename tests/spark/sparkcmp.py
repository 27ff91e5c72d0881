"""Helpers: normalise collected Spark rows into comparable multisets, and plan inspection."""
import math
import re
from collections import Counter

from pyspark.sql import Row


def norm(v):
    if isinstance(v, Row):
        return tuple(norm(x) for x in v)
    if isinstance(v, dict):
        return ("map",) + tuple(sorted(((norm(k), norm(x)) for k, x in v.items()), key=repr))
    if isinstance(v, (list, tuple)):
        return tuple(norm(x) for x in v)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    return v


def rows(df):
    return Counter(repr(norm(r)) for r in df.collect())


def assert_same(dk_df, delta_df, what=""):
    cols = delta_df.columns
    a, b = rows(dk_df.select(*[f"`{c}`" for c in cols])), rows(delta_df.select(*[f"`{c}`" for c in cols]))
    if a != b:
        only_dk = list((a - b).elements())[:5]
        only_delta = list((b - a).elements())[:5]
        raise AssertionError(f"{what}: dk and delta differ\n only dk: {only_dk}\n only delta: {only_delta}")


def rows_and_files(df):
    """Collected rows (as in rows()) and numFiles of the file scans of that same execution."""
    r = rows(df)
    plan = executed_plan(df)
    leaves = plan.collectLeaves()
    total = 0
    for i in range(leaves.size()):
        m = leaves.apply(i).metrics()
        if m.contains("numFiles"):
            total += m.apply("numFiles").value()
    return r, total


def diff(a, b, what):
    if a != b:
        raise AssertionError(f"{what}: dk and delta differ\n only dk: {list((a - b).elements())[:5]}"
                             f"\n only delta: {list((b - a).elements())[:5]}")


def types_by_name(df):
    return {f.name: f.dataType.simpleString() for f in df.schema.fields}


def executed_plan(df):
    return df._jdf.queryExecution().executedPlan()


def plan_string(df):
    return executed_plan(df).toString()


def dk_files(df):
    """(selected, total) files from the dk scan description in the executed plan."""
    m = re.search(r"Files: (\d+)/(\d+)", plan_string(df))
    return (int(m.group(1)), int(m.group(2))) if m else None


def delta_num_files(spark, df):
    """numFiles read by delta-spark's file scan after running df."""
    df.collect()
    plan = executed_plan(df)
    leaves = plan.collectLeaves()
    total = 0
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        m = leaf.metrics()
        if m.contains("numFiles"):
            total += m.apply("numFiles").value()
    return total
