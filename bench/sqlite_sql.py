"""P? "sqlite_sql" (issue #5): `dk sql` (SQLite's row-at-a-time engine over dk scans) vs DuckDB
over the same Parquet files, with and without dk's pushdown.

Input: the sample table of connectors/sqlite/make_sample.py scaled up (cached under
bench/cache/sqlite-sales-<size>): `--sizes 2m` (default) = 4 appends of 500,000 rows, 12 files
partitioned by region, row groups of 65,536 rows, then a delete of ids < 100.

Queries (variants):
  agg        SELECT region, count(*), sum(qty), sum(price) ... GROUP BY region (full scan)
  partition  SELECT count(*), sum(price) ... WHERE region = 'eu'         (partition pruning)
  range      SELECT id, price ... WHERE id BETWEEN 1000000 AND 1000100   (statistics skipping)
  in-list    SELECT count(*) ... WHERE id IN (7, 700000, 1400000)         (IN pushdown)
  limit      SELECT * ... LIMIT 10                                        (LIMIT pushdown)
Systems (fresh process per repeat):
  dk         `dk sql Q --format csv > /dev/null` (wall time of the process)
  dk-nopush  the same with every column reference in WHERE written `+col`, which SQLite does
             not offer to the virtual table: what the row-at-a-time engine costs without
             pushdown (only colUsed projection remains)
  duckdb     DuckDB (this bench's own worker) over read_parquet(<the live files>,
             hive_partitioning=true), threads from --threads; time of the query only
Before timing, dk's answer is compared with DuckDB's (an error row if they differ).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

NAME = "sqlite_sql"
BENCH_DIR = Path(__file__).resolve().parent
SIZES = {"200k": 50_000, "2m": 500_000}

QUERIES = {
    "agg": "SELECT region, count(*) AS n, sum(qty) AS q, round(sum(price), 2) AS p FROM {t} "
           "GROUP BY region ORDER BY region",
    "partition": "SELECT count(*) AS n, round(sum(price), 2) AS p FROM {t} WHERE region = 'eu'",
    "range": "SELECT id, price FROM {t} WHERE id BETWEEN {lo} AND {hi} ORDER BY id",
    "in-list": "SELECT count(*) AS n FROM {t} WHERE id IN (7, {mid}, {hi2})",
    "limit": "SELECT count(*) AS n FROM (SELECT * FROM {t} LIMIT 10)",
}


def _params(rows_per_commit: int) -> dict:
    total = 4 * rows_per_commit
    return {"lo": total // 2, "hi": total // 2 + 100, "mid": total // 3, "hi2": total - 7}


def ensure_table(label: str) -> Path:
    root = BENCH_DIR / "cache" / f"sqlite-sales-{label}"
    if not (root / "_delta_log").exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(BENCH_DIR.parent / "connectors/sqlite/make_sample.py"),
                        str(root), "--rows-per-commit", str(SIZES[label]),
                        "--row-group-rows", "65536"], check=True)
    return root


def no_push(q: str) -> str:
    where = q.split(" WHERE ", 1)
    if len(where) == 1:
        return q
    return where[0] + " WHERE " + re.sub(r"\b(region|id)\b", r"+\1", where[1], count=0)


def dk_query(table: Path, q: str) -> str:
    return q.replace("{t}", f"delta_scan('{table}')")


def _files(table: Path) -> list[str]:
    from deltalake import DeltaTable
    return [u.removeprefix("file://") for u in DeltaTable(str(table)).file_uris()]


def prepare(ctx):
    from run import Prepared
    labels = [s for s in (ctx.sizes or ["2m"]) if s in SIZES]
    tables = {label: ensure_table(label) for label in labels}
    files = {label: _files(t) for label, t in tables.items()}
    info = {f"{label} table": f"{4 * SIZES[label]} rows appended in 4 commits, "
                              f"{len(files[label])} live files" for label in labels}
    return Prepared(warm_files=[Path(f) for fs in files.values() for f in fs], info=info,
                    data={"tables": tables, "files": files})


def _canon(rows):
    return sorted(tuple(round(v, 2) if isinstance(v, float) else v for v in r) for r in rows)


def _dk_rows(dk: str, q: str):
    p = subprocess.run([dk, "sql", q, "--format", "jsonl"], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr.strip()[-300:])
    return [tuple(json.loads(line).values()) for line in p.stdout.splitlines() if line]


def _duck_sql(files: list[str], q: str) -> str:
    lst = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    return q.replace("{t}", f"read_parquet([{lst}], hive_partitioning = true)")


def runs(ctx, prep):
    from run import Run
    import duckdb
    dk = str(ctx.dk_exe("dk"))
    out = []
    for label, table in prep.data["tables"].items():
        files = prep.data["files"][label]
        par = _params(SIZES[label])
        for name, tmpl in QUERIES.items():
            q = tmpl.replace("{lo}", str(par["lo"])).replace("{hi}", str(par["hi"])) \
                .replace("{mid}", str(par["mid"])).replace("{hi2}", str(par["hi2"]))
            variant = f"{label} {name}"
            want = _canon(duckdb.connect().execute(_duck_sql(files, q)).fetchall())
            for system, sql in (("dk", dk_query(table, q)), ("dk-nopush", dk_query(table, no_push(q)))):
                try:
                    got = _canon(_dk_rows(dk, sql))
                    err = None if got == want or name == "limit" and got == [(10,)] else \
                        f"dk answered {got[:3]}, DuckDB {want[:3]}"
                except (RuntimeError, OSError) as e:
                    err = f"dk sql failed: {e}"
                cmd = f"{shlex.quote(dk)} sql {shlex.quote(sql)} --format csv > /dev/null"
                out.append(Run(system, variant, 1, ["/bin/sh", "-c", cmd], mode="wall",
                               error=err, note="wall time of `dk sql ... > /dev/null`"))
            for th in ctx.threads:
                out.append(Run("duckdb", variant, th,
                               [ctx.python, __file__, "duckdb", str(th), _duck_sql(files, q)]))
    return out


def _duck_worker(threads: str, sql: str) -> None:
    import resource
    import duckdb
    con = duckdb.connect(config={"threads": int(threads)})
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    c0, t0 = time.process_time(), time.perf_counter()
    rows = con.execute(sql).fetchall()
    secs = time.perf_counter() - t0
    print(json.dumps({"seconds": secs, "rows": len(rows), "rss_base_kb": base,
                      "cpu_seconds": time.process_time() - c0}))


if __name__ == "__main__":
    if sys.argv[1] == "duckdb":
        _duck_worker(sys.argv[2], sys.argv[3])
