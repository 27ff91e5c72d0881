"""P0 "parquet_decode" (issue #2): decode a TPC-H-lineitem-like Parquet file to Arrow.

Input: 6M rows, 16 lineitem-like columns (int64 keys, int32 linenumber, decimal(15,2)
quantity/price/discount/tax, utf8 flags, date32 ship/commit/receipt dates, utf8
shipinstruct/shipmode/comment with comment 27-43 chars of random words), written once by
pyarrow with snappy, its default row groups (1Mi rows) and dictionary encoding where pyarrow
chooses it. Deterministic (fixed seed of pyarrow.compute.random) and cached under
bench/cache/.

Systems (fresh process per repeat, all columns to Arrow, batches released):
  dk       bench_parquet_decode FILE --threads N   (C driver, bench/parquet_decode.c)
  pyarrow  pq.read_table(FILE, use_threads=N>1) with set_cpu_count/set_io_thread_count(N)
  duckdb   connect(config={'threads': N}).sql("SELECT * FROM read_parquet(FILE)").arrow()
  pyarrow-stream  ParquetFile(FILE).iter_batches(65536) with N threads, batches dropped
           (streams like dk's driver; pyarrow/duckdb above materialise the whole table)
plus the dk "decompress-only" baseline (bench_parquet_decode --decompress-only).
"""

from __future__ import annotations

import sys
from pathlib import Path

NAME = "parquet_decode"
ROWS = 6_000_000
SEED = 20261129


def _uniform(n, seed):
    import pyarrow.compute as pc
    return pc.random(n, initializer=seed)


def _ints(n, lo, hi, seed):
    """n deterministic pseudo-random integers in [lo, hi]."""
    import pyarrow as pa
    import pyarrow.compute as pc
    r = pc.multiply(_uniform(n, seed), float(hi - lo + 1))
    return pc.add(pc.cast(pc.floor(r), pa.int64()), lo)


def _decimal(unscaled, precision=15, scale=2):
    """decimal128(p, s) array whose unscaled values are the given non-negative int64s."""
    import pyarrow as pa
    arr = unscaled.combine_chunks() if hasattr(unscaled, "combine_chunks") else unscaled
    n = len(arr)
    src = memoryview(arr.buffers()[1]).cast("B")[arr.offset * 8:(arr.offset + n) * 8]
    data = bytearray(16 * n)  # little-endian 128-bit: 8 value bytes, 8 zero bytes (>= 0)
    view = memoryview(data)
    for k in range(8):
        view[k::16] = src[k::8]
    return pa.Array.from_buffers(pa.decimal128(precision, scale), n, [None, pa.py_buffer(data)])


_WORDS = ("furiously carefully quickly slyly blithely regular final express pending ironic "
          "special bold even silent unusual fluffy ruthless idle busy close daring deposits "
          "requests packages accounts instructions theodolites pinto beans foxes ideas dolphins "
          "platelets asymptotes dependencies excuses courts frays sauternes warhorses sheaves "
          "across above against along among around about after nag sleep wake haggle cajole "
          "integrate detect boost affix use print believe doze are was the of to").split()


def _comments(n, seed):
    """n strings of 27..43 bytes cut from a deterministic stream of random words."""
    import pyarrow as pa
    import pyarrow.compute as pc
    lengths = _ints(n, 27, 43, seed)
    total = pc.sum(lengths).as_py()
    vocab = pa.array([w + " " for w in _WORDS])
    avg = sum(len(w) + 1 for w in _WORDS) / len(_WORDS)
    n_words = int(total / avg * 1.1) + 1000
    words = pc.take(vocab, pc.cast(_ints(n_words, 0, len(_WORDS) - 1, seed + 1), pa.int32()))
    words = words.combine_chunks() if hasattr(words, "combine_chunks") else words
    data = words.buffers()[2]
    woff = words.buffers()[1]
    assert words.offset == 0 and int.from_bytes(memoryview(woff)[-4:], "little") >= total
    offs = pc.cumulative_sum(lengths)
    offs = pa.concat_arrays([pa.array([0], pa.int64()), offs]).cast(pa.int32())
    return pa.Array.from_buffers(pa.string(), n, [None, offs.buffers()[1], data])


def make_lineitem(path: Path, rows: int = ROWS, seed: int = SEED) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    idx = pa.array(range(rows), pa.int64())
    orderkey = pc.add(pc.multiply(pc.divide(idx, 4), 8), 1)            # sparse, sorted
    linenumber = pc.cast(pc.add(pc.subtract(idx, pc.multiply(pc.divide(idx, 4), 4)), 1),
                         pa.int32())                                    # 1..4
    partkey = _ints(rows, 1, 200_000, seed + 10)
    suppkey = _ints(rows, 1, 10_000, seed + 11)
    qty = _ints(rows, 1, 50, seed + 12)
    unit = _ints(rows, 90_000, 200_000, seed + 13)                     # cents
    price = pc.multiply(qty, unit)                                     # qty * unit price
    discount = _ints(rows, 0, 10, seed + 14)
    tax = _ints(rows, 0, 8, seed + 15)
    ship = _ints(rows, 8036, 10561, seed + 16)                         # 1992-01-02..1998-12-01
    commit = pc.add(ship, _ints(rows, -60, 60, seed + 17))
    receipt = pc.add(ship, _ints(rows, 1, 30, seed + 18))

    def pick(values, s):
        return pc.take(pa.array(values), pc.cast(_ints(rows, 0, len(values) - 1, s), pa.int32()))

    table = pa.table({
        "l_orderkey": orderkey,
        "l_partkey": partkey,
        "l_suppkey": suppkey,
        "l_linenumber": linenumber,
        "l_quantity": _decimal(pc.multiply(qty, 100)),
        "l_extendedprice": _decimal(price),
        "l_discount": _decimal(discount),
        "l_tax": _decimal(tax),
        "l_returnflag": pick(["R", "A", "N"], seed + 19),
        "l_linestatus": pick(["O", "F"], seed + 20),
        "l_shipdate": pc.cast(pc.cast(ship, pa.int32()), pa.date32()),
        "l_commitdate": pc.cast(pc.cast(commit, pa.int32()), pa.date32()),
        "l_receiptdate": pc.cast(pc.cast(receipt, pa.int32()), pa.date32()),
        "l_shipinstruct": pick(["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"],
                               seed + 21),
        "l_shipmode": pick(["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"], seed + 22),
        "l_comment": _comments(rows, seed + 23),
    })
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp, compression="snappy")
    tmp.rename(path)


def prepare(ctx):
    import pyarrow.parquet as pq
    from run import CACHE, Prepared
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"lineitem-{ROWS // 1_000_000}m-seed{SEED}.parquet"
    if not path.exists():
        import time
        print(f"   generating {path.name} ({ROWS} rows) ...", flush=True)
        t0 = time.perf_counter()
        make_lineitem(path)
        print(f"   generated in {time.perf_counter() - t0:.1f}s", flush=True)
    md = pq.ParquetFile(path).metadata
    info = {"file": str(path.relative_to(CACHE.parent.parent)),
            "size": f"{path.stat().st_size / 2**20:.1f} MiB",
            "rows": md.num_rows, "row groups": md.num_row_groups, "columns": md.num_columns,
            "codec": md.row_group(0).column(0).compression,
            "writer": md.created_by}
    return Prepared(warm_files=[path], info=info, data={"path": str(path)})


def runs(ctx, prep):
    from run import Run
    path = prep.data["path"]
    drv = str(ctx.dk_exe("bench_parquet_decode"))
    out = []
    for n in ctx.threads:
        out.append(Run("dk", "decode", n, [drv, path, "--threads", n]))
        out.append(Run("pyarrow", "decode", n, ctx.worker("pyarrow_read", path, n)))
        out.append(Run("duckdb", "decode", n, ctx.worker("duckdb_read", path, n)))
        out.append(Run("pyarrow-stream", "decode", n, ctx.worker("pyarrow_stream", path, n),
                       note="iter_batches(65536), batches dropped"))
    out.append(Run("dk", "decompress-only", 1, [drv, path, "--decompress-only"]))
    for r in out:
        if r.argv:
            r.argv = [str(x) for x in r.argv]
    return out


if __name__ == "__main__":  # manual: python bench/parquet_decode.py OUT [ROWS]
    make_lineitem(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else ROWS)
