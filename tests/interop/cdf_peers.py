"""Shared helpers over the CDF oracle (tests/interop/cdf_oracle.py output): loading it, encoding
Arrow change rows like the oracle's row files, and the peers' change-data-feed readers
(delta-rs `DeltaTable.load_cdf`, polars-deltalake `scan_cdf`, which is delta-kernel-rs)."""
import calendar
import datetime as dt
import decimal
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def cdf_dir():
    return os.environ.get("DK_CDF_INTEROP_DIR") or os.path.join(REPO, "build", "interop_cdf")


def load(outdir, name):
    with open(os.path.join(outdir, name, "cdf_oracle.json"), encoding="utf-8") as f:
        return json.load(f)


def tables(outdir):
    return sorted(n for n in os.listdir(outdir)
                  if os.path.exists(os.path.join(outdir, n, "cdf_oracle.json")))


def rows_of(outdir, name, rel):
    with open(os.path.join(outdir, name, rel), encoding="utf-8") as f:
        return [ln.rstrip("\n") for ln in f if ln.strip()]


def _enc(v):
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return calendar.timegm(v.timetuple()) * 1000000 + v.microsecond
    if isinstance(v, dt.date):
        return "%04d-%02d-%02d" % (v.year, v.month, v.day)
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, bytes):
        return v.hex()
    return v


def encode_arrow(tbl, columns, drop=()):
    """Rows of an Arrow table as the oracle's sorted canonical JSON lines, in `columns` order
    (the oracle's CDF read schema) minus `drop`."""
    cols = [c for c in columns if c not in drop]
    out = []
    for r in tbl.to_pylist():
        out.append(json.dumps({c: _enc(r.get(c)) for c in cols}, separators=(",", ":"),
                              ensure_ascii=False))
    out.sort()
    return out


def drop_keys(lines, drop):
    out = []
    for ln in lines:
        d = json.loads(ln)
        for k in drop:
            d.pop(k, None)
        out.append(json.dumps(d, separators=(",", ":"), ensure_ascii=False))
    out.sort()
    return out


def deltars_cdf(root, a, b):
    import pyarrow as pa
    from deltalake import DeltaTable
    return pa.table(DeltaTable(root).load_cdf(starting_version=a, ending_version=b).read_all())


def polars_cdf(root, a, b):
    import polars_deltalake as pdl
    return pdl.scan_cdf(root, start_version=a, end_version=b).collect().to_arrow()
