"""Spark-generated expected rows: for the simple Delta tables of ../shared/testdata (latest
version, no partition columns, no column mapping, no deletion vectors, JSON-only log), the rows
dk decodes from the table's active data files must equal the expected file (a multiset), using
the value encoding of manifest.json. The active files come from replaying the JSON commits
(add/remove); dk only decodes Parquet here."""
import base64
import datetime
import glob
import json
import os
import struct
import urllib.parse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pq_oracle import dk_rows

from test_parquet_testdata import TESTDATA

MANIFEST = os.path.join(TESTDATA, "manifest.json")


def _f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def _active_files(table):
    log = os.path.join(table, "_delta_log")
    commits = sorted(glob.glob(os.path.join(log, "*.json")))
    if not commits or os.path.basename(commits[0]) != f"{0:020d}.json":
        return None
    active = {}
    for i, c in enumerate(commits):
        if os.path.basename(c) != f"{i:020d}.json":
            return None
        for line in open(c):
            if not line.strip():
                continue
            a = json.loads(line)
            if "add" in a:
                if a["add"].get("deletionVector") or a["add"].get("partitionValues"):
                    return None
                active[a["add"]["path"]] = True
            elif "remove" in a:
                active.pop(a["remove"]["path"], None)
            elif "metaData" in a:
                conf = a["metaData"].get("configuration") or {}
                if conf.get("delta.columnMapping.mode", "none") != "none" or a["metaData"].get("partitionColumns"):
                    return None
    return [os.path.join(table, urllib.parse.unquote(p)) for p in active]


def _canon(v, t):
    """dk's JSON-lines value of Arrow type t -> the manifest's encoding."""
    if v is None:
        return None
    if pa.types.is_timestamp(t):
        s = v.rstrip("Z")
        d = datetime.datetime.fromisoformat(s[:26]).replace(tzinfo=datetime.timezone.utc)
        return (d - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(microseconds=1)
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return base64.b64decode(v).hex()
    if pa.types.is_float32(t):
        return repr(_f32(v)) if isinstance(v, (int, float)) else v
    if pa.types.is_float64(t):
        return repr(float(v)) if isinstance(v, (int, float)) else v
    if pa.types.is_struct(t):
        return {t.field(i).name: _canon(v.get(t.field(i).name), t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_map(t):
        pairs = v.items() if isinstance(v, dict) else v
        out = [[_canon(k, t.key_type), _canon(x, t.item_type)] for k, x in pairs]
        return sorted(out, key=lambda p: json.dumps(p[0], sort_keys=True))
    if pa.types.is_list(t):
        return [_canon(x, t.value_type) for x in v]
    return v


def _canon_expected(v, t):
    if v is None:
        return None
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        if isinstance(v, str):
            return v
        return repr(_f32(v)) if pa.types.is_float32(t) else repr(float(v))
    if pa.types.is_struct(t):
        return {t.field(i).name: _canon_expected(v.get(t.field(i).name), t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_map(t):
        return sorted([[_canon_expected(k, t.key_type), _canon_expected(x, t.item_type)] for k, x in v],
                      key=lambda p: json.dumps(p[0], sort_keys=True))
    if pa.types.is_list(t):
        return [_canon_expected(x, t.value_type) for x in v]
    return v


def _cases():
    if not os.path.exists(MANIFEST):
        return []
    out = []
    for c in json.load(open(MANIFEST))["cases"]:
        if (c["kind"] == "read" and c["version"] is None and not c["partition_columns"] and not c["features"]
                and c.get("filter") is None and c.get("columns") == "all" and c["expected"].endswith(".jsonl")):
            out.append(c)
    return out


CASES = _cases()


def test_cases_found():
    assert len(CASES) > 10


@pytest.mark.parametrize("chunk", range(4))
def test_spark_expected_rows(chunk):
    checked, failures = 0, []
    for c in CASES[chunk::4]:
        table = os.path.join(TESTDATA, c["table"])
        files = _active_files(table)
        if not files or not all(os.path.exists(f) for f in files):
            continue
        schema = pq.read_schema(files[0])
        exp_rows = [json.loads(l) for l in open(os.path.join(TESTDATA, c["expected"])) if l.strip()]
        if len(exp_rows) > 20000 or (exp_rows and set(exp_rows[0]) != set(schema.names)):
            continue
        got = []
        for f in files:
            got += dk_rows(f)
        types = {f.name: f.type for f in schema}
        canon_got = sorted(json.dumps({k: _canon(v, types[k]) for k, v in r.items()}, sort_keys=True) for r in got)
        canon_exp = sorted(json.dumps({k: _canon_expected(v, types[k]) for k, v in r.items()}, sort_keys=True)
                           for r in exp_rows)
        checked += 1
        if canon_got != canon_exp:
            diff = [x for x in canon_got if x not in canon_exp][:2]
            failures.append(f"{c['id']}: {len(canon_got)} vs {len(canon_exp)} rows; e.g. dk {diff} "
                            f"vs expected {[x for x in canon_exp if x not in canon_got][:2]}")
    assert not failures, "\n".join(failures)
    print(f"checked {checked} tables")
