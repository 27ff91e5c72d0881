"""Checkpoint add/remove rows read straight from the Parquet leaves (src/log/checkpoint_parquet.c
direct path over src/codec/parquet/pages.c dk_pq__leaf_read).

Real checkpoints from the shared corpus (deletion vectors on add and remove rows, partition
values, remove tombstones, multi-part checkpoints, V2 checkpoints with Parquet sidecars under a
Parquet or a JSON top-level file) are copied to a temp dir and their checkpoint Parquet files
(parts, top-level file and sidecars) rewritten with pyarrow in several layouts: PLAIN or
dictionary pages, data page v1 or v2, tiny pages, several small row groups, DELTA_* /
BYTE_STREAM_SPLIT encodings, codecs none / snappy / zstd / gzip. The JSON commits up to the
checkpoint version are deleted in the copy, so `dk files --version V` can only come from the
rewritten checkpoint.

Oracles (none written by us):
  * pyarrow's read of the rewritten checkpoint: the live files at V are exactly its add rows,
    each with its path (URL-decoded), size, modificationTime, partitionValues (null kept
    apart from a value), deletionVector descriptor, baseRowId, defaultRowCommitVersion, tags
    and stats; its remove rows are the tombstones (path, deletionTimestamp, size, dataChange,
    read through libdk's dk_snapshot_tombstone with ctypes, since neither the CLI nor the
    binding lists tombstones). The same must hold for dk's output on the original table.
  * delta-rs at the latest version of the rewritten copy (path, size, modificationTime,
    numRecords).
A synthetic table (bench/snapshot_load.py make_table, ~3000 files) adds what the corpus lacks:
tags (with null values), baseRowId / defaultRowCommitVersion, null and missing partition
values, URL-encoded paths, DVs of all three storage types on add rows and DVs on remove rows.
Seeded corruptions (byte flips in the add.path / add.partitionValues / remove.path chunks,
truncations) must end in a clean error naming the checkpoint file, or in success; never in a
crash or a sanitizer report.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import pytest

import dkharness

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

# (id, table under the shared corpus, checkpoint version, manifest feature it must carry)
CASES = [
    ("dv-partitioned", "delta-golden/dv-partitioned-with-checkpoint", 10,
     "deletion-vectors-in-use"),
    ("dv-columnmapping", "delta-golden/dv-with-columnmapping", 10, "column-mapping-name"),
    ("dv-removes", "delta-kernel-defaults/basic-dv-with-checkpoint", 40, "deletion-vectors-in-use"),
    ("tombstones", "delta-golden/checkpoint", 10, "classic-checkpoint"),
    ("multi-part", "delta-golden/multi-part-checkpoint", 1, "multi-part-checkpoint"),
    ("multi-part-3", "delta-kernel-defaults/kernel-pagination-multi-part-checkpoints", 0, None),
    ("v2-parquet", "delta-golden/v2-checkpoint-parquet", 2, "v2-checkpoint-parquet"),
    ("v2-json", "delta-golden/v2-checkpoint-json", 2, "v2-checkpoint-json"),
]

_DELTA_ENC = {"add.path": "DELTA_BYTE_ARRAY", "add.size": "DELTA_BINARY_PACKED",
              "add.modificationTime": "DELTA_BINARY_PACKED",
              "add.partitionValues.key_value.key": "DELTA_LENGTH_BYTE_ARRAY",
              "add.partitionValues.key_value.value": "DELTA_BYTE_ARRAY",
              "add.deletionVector.cardinality": "BYTE_STREAM_SPLIT",
              "add.deletionVector.pathOrInlineDv": "DELTA_LENGTH_BYTE_ARRAY",
              "remove.path": "DELTA_BYTE_ARRAY", "remove.deletionTimestamp": "DELTA_BINARY_PACKED"}

LAYOUTS = {
    "plain-v1-none-rg2": dict(use_dictionary=False, data_page_version="1.0",
                              compression="none", row_group_size=2),
    "dict-v2-zstd-tiny": dict(use_dictionary=True, data_page_version="2.0", compression="zstd",
                              data_page_size=1, write_batch_size=1),
    "dict-v1-gzip-rg3": dict(use_dictionary=True, data_page_version="1.0", compression="gzip",
                             row_group_size=3, data_page_size=64, write_batch_size=2),
    "plain-v2-snappy-tiny": dict(use_dictionary=False, data_page_version="2.0",
                                 compression="snappy", data_page_size=1, write_batch_size=1),
    "delta-enc-v2-rg3": dict(use_dictionary=False, data_page_version="2.0", compression="zstd",
                             row_group_size=3, column_encoding=_DELTA_ENC),
}

# The synthetic table has ~2700 checkpoint rows: bigger row groups and pages there.
SYN_LAYOUTS = {
    "snappy-default": dict(compression="snappy"),
    "dict-v2-zstd-rg700": dict(use_dictionary=True, data_page_version="2.0", compression="zstd",
                               row_group_size=700, data_page_size=512, write_batch_size=16),
    "plain-v1-gzip-rg333": dict(use_dictionary=False, data_page_version="1.0",
                                compression="gzip", row_group_size=333, data_page_size=256,
                                write_batch_size=8),
    "delta-enc-v2-none-rg1000": dict(use_dictionary=False, data_page_version="2.0",
                                     compression="none", row_group_size=1000,
                                     column_encoding=_DELTA_ENC),
}


# ---- helpers --------------------------------------------------------------------------------

def checkpoint_files(root: Path, version: int) -> list[Path]:
    """The checkpoint Parquet files of `version`: classic / multi-part parts, the V2
    top-level file and the sidecars (all files of _sidecars belong to it in the corpus)."""
    log = root / "_delta_log"
    out = sorted(p for p in log.iterdir()
                 if p.name.startswith(f"{version:020d}.checkpoint") and p.suffix == ".parquet")
    if (log / "_sidecars").is_dir():
        out += sorted((log / "_sidecars").glob("*.parquet"))
    return out


def prepare_copy(src: Path, dst: Path, version: int) -> Path:
    """Copies a table and deletes its commits (and checksums) up to the checkpoint version and
    _last_checkpoint, so the checkpoint is the only source of the state at `version`."""
    shutil.copytree(src, dst)
    log = dst / "_delta_log"
    for p in list(log.iterdir()):
        stem = p.name.split(".")[0]
        if p.suffix in (".json", ".crc") and ".checkpoint." not in p.name and stem.isdigit() \
                and int(stem) <= version:
            p.unlink()
    (log / "_last_checkpoint").unlink(missing_ok=True)
    return dst


def rewrite(path: Path, layout: dict, table=None) -> None:
    """Rewrites one checkpoint file with pyarrow in `layout`, keeping its schema."""
    t = pq.read_table(path) if table is None else table
    kw = dict(layout)
    enc = kw.pop("column_encoding", None)
    if enc:
        names = {c for c in _leaf_paths(t.schema)}
        kw["column_encoding"] = {k: v for k, v in enc.items() if k in names}
    pq.write_table(t, path, **kw)
    assert pq.read_schema(path) == t.schema


def _leaf_paths(schema):
    def walk(prefix, t):
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                yield from walk(f"{prefix}.{t.field(i).name}", t.field(i).type)
        elif pa.types.is_map(t):
            yield f"{prefix}.key_value.key"
            yield from walk(f"{prefix}.key_value.value", t.item_type)
        elif pa.types.is_list(t):
            yield from walk(f"{prefix}.list.element", t.value_type)
        else:
            yield prefix
    for f in schema:
        yield from walk(f.name, f.type)


def fix_sidecar_sizes(root: Path, version: int, layout: dict) -> None:
    """V2: the top-level checkpoint's sidecar actions record each sidecar's size in bytes."""
    log = root / "_delta_log"
    sizes = {p.name: p.stat().st_size for p in (log / "_sidecars").glob("*.parquet")}
    for top in log.glob(f"{version:020d}.checkpoint.*.json"):
        lines = []
        for line in top.read_text().splitlines():
            a = json.loads(line)
            if "sidecar" in a:
                a["sidecar"]["sizeInBytes"] = sizes[a["sidecar"]["path"]]
            lines.append(json.dumps(a))
        top.write_text("\n".join(lines) + "\n")
    for top in log.glob(f"{version:020d}.checkpoint.*.parquet"):
        t = pq.read_table(top)
        rows = t.column("sidecar").to_pylist()
        for r in rows:
            if r is not None:
                r["sizeInBytes"] = sizes[r["path"]]
        col = pa.array(rows, t.schema.field("sidecar").type)
        t = t.set_column(t.schema.get_field_index("sidecar"), t.schema.field("sidecar"), col)
        rewrite(top, layout, table=t)


def dk_files(root: Path, version: int | None = None) -> dict:
    args = ["files", root, "--json"] + ([] if version is None else ["--version", version])
    rc, out, err = dkharness.run_dk(*args, check=True)
    return json.loads(out)


def _duckdb_rows(f: Path, column: str) -> list:
    """The same rows through DuckDB, maps as lists of (key, value) like pyarrow's."""
    duckdb = pytest.importorskip("duckdb")

    def conv(v, t):
        if v is None:
            return None
        if pa.types.is_map(t):
            return [(k, conv(x, t.item_type)) for k, x in v.items()]
        if pa.types.is_struct(t):
            return {t.field(i).name: conv(v[t.field(i).name], t.field(i).type)
                    for i in range(t.num_fields)}
        if pa.types.is_list(t):
            return [conv(x, t.value_type) for x in v]
        return v
    t = pq.read_schema(f).field(column).type
    con = duckdb.connect()
    rows = con.execute(f'SELECT "{column}" FROM read_parquet(?)', [str(f)]).fetchall()
    return [conv(r[0], t) for r in rows]


def oracle_rows(files: list[Path], column: str) -> list[dict]:
    rows = []
    for f in files:
        if column in pq.read_schema(f).names:
            try:
                got = pq.read_table(f, columns=[column]).column(column).to_pylist()
            except pa.ArrowInvalid:
                # pyarrow 26 fails to read back some 1-row files it wrote with dictionary
                # pages and data_page_size=1 ("Struct child array #1 has length smaller than
                # expected"); DuckDB reads them
                got = _duckdb_rows(f, column)
            rows += [r for r in got if r is not None]
    return rows


def expect_file(a: dict) -> dict:
    """What `dk files --json` must print for checkpoint add row `a` (as pyarrow reads it)."""
    e = {"path": unquote(a["path"]), "size": a["size"],
         "modification_time": a["modificationTime"],
         "partition_values": dict(a["partitionValues"] or [])}
    dv = a.get("deletionVector")
    if dv is not None:
        d = {"storageType": dv["storageType"], "pathOrInlineDv": dv["pathOrInlineDv"]}
        if dv.get("offset") is not None:
            d["offset"] = dv["offset"]
        d["sizeInBytes"] = dv["sizeInBytes"]
        d["cardinality"] = dv["cardinality"]
        e["deletion_vector"] = d
    if a.get("baseRowId") is not None:
        e["base_row_id"] = a["baseRowId"]
    if a.get("defaultRowCommitVersion") is not None:
        e["default_row_commit_version"] = a["defaultRowCommitVersion"]
    if a.get("stats") is not None:
        e["stats"] = a["stats"]
    if a.get("tags") is not None:
        e["tags"] = dict(a["tags"])
    return e


def canon(files: list[dict]) -> list[str]:
    return sorted(json.dumps(f, sort_keys=True) for f in files)


def expect_tomb(r: dict) -> tuple:
    ts, size, dc = r.get("deletionTimestamp"), r.get("size"), r.get("dataChange")
    return (unquote(r["path"]), -1 if ts is None else ts, -1 if size is None else size,
            1 if dc is None else int(dc))


_TOMB_SCRIPT = textwrap.dedent(r"""
    import ctypes, json, sys
    lib = ctypes.CDLL(sys.argv[1])
    class Opts(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint), ("at_version", ctypes.c_int64),
                    ("by_timestamp", ctypes.c_int), ("timestamp_ms", ctypes.c_int64),
                    ("metadata_only", ctypes.c_int)]
    class Tomb(ctypes.Structure):
        _fields_ = [("path", ctypes.c_char_p), ("deletion_timestamp", ctypes.c_int64),
                    ("size", ctypes.c_int64), ("data_change", ctypes.c_int)]
    lib.dk_table_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.dk_snapshot_open.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.dk_snapshot_num_tombstones.argtypes = [ctypes.c_void_p]
    lib.dk_snapshot_num_tombstones.restype = ctypes.c_int64
    lib.dk_snapshot_tombstone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    lib.dk_snapshot_free.argtypes = [ctypes.c_void_p]
    lib.dk_table_free.argtypes = [ctypes.c_void_p]
    err = ctypes.create_string_buffer(4096)
    out = []
    for root, version in json.loads(sys.argv[2]):
        t, s = ctypes.c_void_p(), ctypes.c_void_p()
        if lib.dk_table_open(ctypes.byref(t), root.encode(), None, err) != 0:
            sys.exit("table_open: " + err.raw[4:].split(b"\0")[0].decode())
        o = Opts(1, version, 0, 0, 0)
        if lib.dk_snapshot_open(ctypes.byref(s), t, ctypes.byref(o), err) != 0:
            sys.exit("snapshot_open: " + err.raw[4:].split(b"\0")[0].decode())
        tombs = []
        for i in range(lib.dk_snapshot_num_tombstones(s)):
            tb = Tomb()
            assert lib.dk_snapshot_tombstone(ctypes.byref(tb), s, i, err) == 0
            tombs.append([tb.path.decode(), tb.deletion_timestamp, tb.size, tb.data_change])
        out.append(tombs)
        lib.dk_snapshot_free(s)
        lib.dk_table_free(t)
    print(json.dumps(out))
""")


def _sanitized_build() -> bool:
    cache = dkharness.build_dir() / "CMakeCache.txt"
    return cache.exists() and "DK_SANITIZE:BOOL=ON" in cache.read_text()


def dk_tombstones(roots: list[tuple[Path, int]]) -> list[list[tuple]]:
    """Tombstones of each (table, version) through libdk's C API, in a child interpreter
    (with the ASan runtime preloaded when libdk is a sanitizer build)."""
    lib = dkharness.build_dir() / "libdk.so"
    if not lib.exists():
        pytest.skip(f"{lib} not built")
    env = dict(os.environ)
    if _sanitized_build():
        from test_py_support import libasan_path
        env["LD_PRELOAD"] = libasan_path()
        env["ASAN_OPTIONS"] = "detect_leaks=0"  # the interpreter keeps memory by design
    p = subprocess.run([sys.executable, "-c", _TOMB_SCRIPT, str(lib),
                        json.dumps([[str(r), v] for r, v in roots])],
                       capture_output=True, text=True, env=env, timeout=120)
    dkharness.check_process(["python", "tombstones"], p.returncode, p.stderr)
    assert p.returncode == 0, p.stderr
    return [[tuple(t) for t in ts] for ts in json.loads(p.stdout)]


def check_against_pyarrow(root: Path, version: int, files: list[Path]) -> dict:
    """dk files at the checkpoint version == pyarrow's add rows; returns dk's output."""
    got = dk_files(root, version)
    assert got["version"] == version
    adds = oracle_rows(files, "add")
    assert len(got["files"]) == len(adds)
    assert canon(got["files"]) == canon([expect_file(a) for a in adds])
    return got


# ---- the corpus checkpoints in every layout -------------------------------------------------

@pytest.fixture(scope="module")
def originals(tmp_path_factory, manifest, testdata):
    """Per case: the un-rewritten copy (commits <= V deleted) and dk's output on it."""
    out = {}
    for cid, rel, version, feature in CASES:
        src = testdata / rel
        if not src.is_dir():
            pytest.skip(f"{src} missing")
        feats = {f for c in manifest["cases"] if c.get("table") == rel
                 for f in c.get("features", [])}
        if feature:
            assert feature in feats, (rel, feats)
        root = prepare_copy(src, tmp_path_factory.mktemp(cid) / "t", version)
        files = checkpoint_files(root, version)
        assert files, rel
        # the originals on dk's side: same answer from the shared table and the stripped copy
        got = check_against_pyarrow(root, version, files)
        assert canon(dk_files(src, version)["files"]) == canon(got["files"])
        out[cid] = (root, version, files, got)
    # what the corpus brings in: DVs on add and remove rows, tombstones, partition values
    adds = [a for cid in out for a in oracle_rows(out[cid][2], "add")]
    removes = [r for cid in out for r in oracle_rows(out[cid][2], "remove")]
    assert sum(a["deletionVector"] is not None for a in adds) >= 5
    assert sum(r.get("deletionVector") is not None for r in removes) >= 30
    assert sum(bool(a["partitionValues"]) for a in adds) >= 30
    return out


@pytest.mark.dk_command("files")
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_corpus_checkpoint_layouts(originals, tmp_path, layout):
    copies = []
    for cid, (orig, version, _, want) in originals.items():
        root = tmp_path / cid
        shutil.copytree(orig, root)
        files = checkpoint_files(root, version)
        for f in files:
            rewrite(f, LAYOUTS[layout])
        if (root / "_delta_log" / "_sidecars").is_dir():
            fix_sidecar_sizes(root, version, LAYOUTS[layout])
        rg = LAYOUTS[layout].get("row_group_size")
        for f in files:
            md = pq.ParquetFile(f).metadata
            assert md.num_row_groups == (-(-md.num_rows // rg) if rg else 1), f
        got = check_against_pyarrow(root, version, files)
        # and the same as dk on the original (un-rewritten) checkpoint
        assert canon(got["files"]) == canon(want["files"]), cid
        copies.append((root, version, files))
    # tombstones: the remove rows of the checkpoint, as pyarrow reads them
    tombs = dk_tombstones([(r, v) for r, v, _ in copies])
    for (root, version, files), got in zip(copies, tombs):
        want = [expect_tomb(r) for r in oracle_rows(files, "remove")]
        assert Counter(got) == Counter(want), root.name


@pytest.mark.dk_command("files")
def test_corpus_latest_matches_delta_rs(originals, tmp_path):
    deltalake = pytest.importorskip("deltalake")
    layout = LAYOUTS["dict-v1-gzip-rg3"]
    checked = 0
    for cid, (orig, version, _, _) in originals.items():
        root = tmp_path / cid
        shutil.copytree(orig, root)
        for f in checkpoint_files(root, version):
            rewrite(f, layout)
        if (root / "_delta_log" / "_sidecars").is_dir():
            fix_sidecar_sizes(root, version, layout)
        try:
            dt = deltalake.DeltaTable(str(root))
            a = pa.table(dt.get_add_actions(flatten=True)).to_pydict()
        except Exception as e:  # noqa: BLE001 - a reader feature delta-rs lacks
            print(f"delta-rs cannot read {cid}: {e}")
            continue
        got = dk_files(root)
        assert got["version"] == dt.version(), cid
        want = sorted(zip(a["path"], a["size_bytes"], a["modification_time"],
                          a.get("num_records", [None] * len(a["path"]))))
        mine = sorted((f["path"], f["size"], f["modification_time"],
                       json.loads(f["stats"]).get("numRecords") if "stats" in f else None)
                      for f in got["files"])
        assert mine == want, cid
        checked += 1
    assert checked >= 6


# ---- synthetic: every add/remove field, ~3000 files -----------------------------------------

def _dv(kind: str, i: int) -> dict:
    if kind == "u":  # 20-char z85 UUID text (with a prefix on some)
        return {"storageType": "u", "pathOrInlineDv": ("ab" if i % 2 else "") + "vBn[lx{q8@P<9BNH/isA",
                "offset": 1 + i, "sizeInBytes": 36 + i % 5, "cardinality": 1 + i % 9,
                "maxRowIndex": None}
    if kind == "i":  # inline: no offset
        return {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
                "offset": None, "sizeInBytes": 40, "cardinality": 6, "maxRowIndex": 17}
    return {"storageType": "p", "pathOrInlineDv": f"/abs/dv/deletion_vector_{i}.bin",
            "offset": 4, "sizeInBytes": 33, "cardinality": 2 + i, "maxRowIndex": None}


def enrich_checkpoint(ck: Path) -> None:
    """Puts tags, row tracking, DVs, odd partition values and encoded paths on add rows and
    DVs / missing fields on remove rows, keeping the Delta checkpoint schema."""
    t = pq.read_table(ck)
    add_t, rm_t = t.schema.field("add").type, t.schema.field("remove").type
    adds = t.column("add").to_pylist()
    k = 0
    for a in adds:
        if a is None:
            continue
        k += 1
        if k % 5 == 1:
            a["deletionVector"] = _dv("uip"[(k // 5) % 3], k)
        if k % 7 == 2:
            a["tags"] = [("INSERTION_TIME", str(1700000000000000 + k)), ("OPT", None),
                         ("MAX", "x\"y\\z")] if k % 2 else []
        if k % 3 == 0:
            a["baseRowId"] = 1000 * k
        if k % 4 == 0:
            a["defaultRowCommitVersion"] = k % 100
        if k % 11 == 4:
            a["partitionValues"] = [("date", None)]
        elif k % 13 == 5:
            a["partitionValues"] = []
        elif k % 23 == 9:  # the map itself null (the protocol requires it; dk reads none)
            a["partitionValues"] = None
        if k % 19 == 7:
            a["path"] = a["path"].replace("part-", "a%20b%3Ac%25-part-")
    removes = t.column("remove").to_pylist()
    k = 0
    for r in removes:
        if r is None:
            continue
        k += 1
        if k % 3 == 0:
            r["deletionVector"] = _dv("uip"[k % 3], k)
        if k % 10 == 1:
            r["deletionTimestamp"] = None
        if k % 10 == 2:
            r["size"] = None
        if k % 10 == 3:
            r["dataChange"] = False
        if k % 17 == 5:
            r["path"] = r["path"].replace("part-", "x%2Fy%20-part-")
    # a DV-carrying add and a remove of the same file with another DV: both kept, like Spark's
    first_dv = next(a for a in adds if a is not None and a["deletionVector"] is not None)
    rm_first = next(i for i, r in enumerate(removes) if r is not None)
    removes[rm_first] = dict(removes[rm_first], path=first_dv["path"], deletionVector=_dv("u", 999))
    t = t.set_column(t.schema.get_field_index("add"), t.schema.field("add"),
                     pa.array(adds, add_t))
    t = t.set_column(t.schema.get_field_index("remove"), t.schema.field("remove"),
                     pa.array(removes, rm_t))
    proto = t.column("protocol").to_pylist()
    for p in proto:
        if p is not None:
            p.update(minReaderVersion=3, minWriterVersion=7, readerFeatures=["deletionVectors"],
                     writerFeatures=["deletionVectors", "domainMetadata", "rowTracking"])
    t = t.set_column(t.schema.get_field_index("protocol"), t.schema.field("protocol"),
                     pa.array(proto, t.schema.field("protocol").type))
    pq.write_table(t, ck, compression="snappy")


SYN_VERSION = 100


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    import snapshot_load
    root = tmp_path_factory.mktemp("syn") / "t"
    facts = snapshot_load.make_table(root, 3000, seed=11)
    assert snapshot_load.CHECKPOINT_VERSION == SYN_VERSION
    (root / "_delta_log" / "_last_checkpoint").unlink()
    ck = checkpoint_files(root, SYN_VERSION)[0]
    enrich_checkpoint(ck)
    return root, facts


@pytest.mark.dk_command("files")
@pytest.mark.parametrize("layout", sorted(SYN_LAYOUTS))
def test_synthetic_all_fields(synthetic, tmp_path, layout):
    base, facts = synthetic
    root = tmp_path / "t"
    shutil.copytree(base, root)
    files = checkpoint_files(root, SYN_VERSION)
    rewrite(files[0], SYN_LAYOUTS[layout])
    adds = oracle_rows(files, "add")
    removes = oracle_rows(files, "remove")
    assert len(adds) == facts["checkpoint_adds"] and len(removes) == facts["tombstones"]
    # the fields are there, as pyarrow reads them
    assert {a["deletionVector"]["storageType"] for a in adds if a["deletionVector"]} == set("uip")
    assert any(a["tags"] for a in adds) and any(a["tags"] == [] for a in adds)
    assert any(v is None for a in adds if a["tags"] for _, v in a["tags"])
    assert any(a["partitionValues"] == [("date", None)] for a in adds)
    assert any(a["partitionValues"] is None for a in adds)
    assert any("%20" in a["path"] for a in adds)
    assert sum(r["deletionVector"] is not None for r in removes) >= 40
    got = check_against_pyarrow(root, SYN_VERSION, files)
    assert any(f["path"].count(" ") and "%" in f["path"] for f in got["files"])
    (tombs,) = dk_tombstones([(root, SYN_VERSION)])
    assert Counter(tombs) == Counter(expect_tomb(r) for r in removes)
    # latest version: the commits after the checkpoint remove files by their original path
    # (no DV), so the renamed and DV-carrying checkpoint adds stay
    removed, added = set(), 0
    for v in range(SYN_VERSION + 1, facts["version"] + 1):
        for line in (root / "_delta_log" / f"{v:020d}.json").read_text().splitlines():
            a = json.loads(line)
            added += "add" in a
            if "remove" in a:
                removed.add(a["remove"]["path"])
    want = sum(1 for a in adds if a["deletionVector"] is not None or a["path"] not in removed)
    latest = dk_files(root)
    assert latest["version"] == facts["version"]
    assert len(latest["files"]) == want + added


@pytest.mark.dk_command("files")
@pytest.mark.parametrize("row_group_size", [1 << 20, 7000])
def test_synthetic_batch_boundaries(synthetic, tmp_path, row_group_size):
    """~18600 checkpoint rows: the direct path reads its leaves 16384 rows at a time, so a
    batch ends inside a row group (and, with 7000-row groups, batches end at row groups)."""
    base, facts = synthetic
    root = tmp_path / "t"
    shutil.copytree(base, root)
    ck = checkpoint_files(root, SYN_VERSION)[0]
    t = pq.read_table(ck)
    head = facts["checkpoint_rows"] - facts["checkpoint_adds"] - facts["tombstones"]
    body = t.slice(head)
    parts = [t]
    for k in range(1, 7):  # the add and remove rows again, under other file names
        rows = body.to_pylist()
        for r in rows:
            for col in ("add", "remove"):
                if r[col] is not None:
                    r[col]["path"] = r[col]["path"].replace(".c000.", f".c{k:03d}.")
        parts.append(pa.Table.from_pylist(rows, schema=t.schema))
    t = pa.concat_tables(parts)
    assert t.num_rows > 16384 + 1000
    pq.write_table(t, ck, compression="snappy", row_group_size=row_group_size,
                   data_page_size=4096)
    files = [ck]
    got = check_against_pyarrow(root, SYN_VERSION, files)
    assert len(got["files"]) == 7 * facts["checkpoint_adds"]
    (tombs,) = dk_tombstones([(root, SYN_VERSION)])
    assert Counter(tombs) == Counter(expect_tomb(r) for r in oracle_rows(files, "remove"))


def legacy_map_names(path: Path) -> None:
    """Renames every map's repeated group key_value -> "map" and its fields key / value ->
    "k" / "v" in the footer, as Parquet's backward-compatibility rules for MAP allow (older
    writers used other names; readers find the fields by position). Thrift compact strings
    are length-prefixed and the footer is the file's tail, so only its length changes."""
    t = pq.read_table(path)
    pq.write_table(t, path, store_schema=False, compression="snappy")
    data = path.read_bytes()
    flen = int.from_bytes(data[-8:-4], "little")
    body, footer = data[:-8 - flen], data[-8 - flen:-8]
    n = footer.count(b"\x09key_value")
    footer = (footer.replace(b"\x09key_value", b"\x03map").replace(b"\x03key", b"\x01k")
              .replace(b"\x05value", b"\x01v"))
    path.write_bytes(body + footer + len(footer).to_bytes(4, "little") + b"PAR1")
    assert n > 0 and "key_value" not in str(pq.ParquetFile(path).schema)
    assert pq.read_table(path).to_pylist() == t.to_pylist()  # same rows, other names


@pytest.mark.dk_command("files")
def test_legacy_map_names(originals, synthetic, tmp_path):
    """Maps whose Parquet group and fields are not named key_value / key / value: the direct
    path must still read partitionValues and tags (it used to drop them silently)."""
    for cid in ("dv-partitioned", "v2-parquet"):
        orig, version, _, want = originals[cid]
        root = tmp_path / cid
        shutil.copytree(orig, root)
        files = checkpoint_files(root, version)
        for f in files:
            legacy_map_names(f)
        if (root / "_delta_log" / "_sidecars").is_dir():
            fix_sidecar_sizes(root, version, {})
        got = check_against_pyarrow(root, version, files)
        assert canon(got["files"]) == canon(want["files"]), cid
    base, _ = synthetic
    root = tmp_path / "syn"
    shutil.copytree(base, root)
    files = checkpoint_files(root, SYN_VERSION)
    legacy_map_names(files[0])
    got = check_against_pyarrow(root, SYN_VERSION, files)
    assert any(f.get("tags") for f in got["files"])
    assert any(f["partition_values"] for f in got["files"])


# ---- corruption -----------------------------------------------------------------------------

def _chunks(ck: Path, prefixes: tuple[str, ...]) -> list[tuple[str, int, int]]:
    md = pq.ParquetFile(ck).metadata
    out = []
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for j in range(rg.num_columns):
            c = rg.column(j)
            if c.path_in_schema.startswith(prefixes):
                start = c.dictionary_page_offset or c.data_page_offset
                out.append((c.path_in_schema, start, c.total_compressed_size))
    return out


def _corrupt_runs(root: Path, version: int, ck: Path, seed: int, n_flips: int) -> tuple[int, int]:
    """Byte flips in the add.path / add.partitionValues / remove.path chunks and truncations
    of `ck`; dk files must fail cleanly (naming the file) or succeed. Returns (runs, fails)."""
    data = ck.read_bytes()
    chunks = _chunks(ck, ("add.path", "add.partitionValues.", "remove.path"))
    assert {c[0] for c in chunks} >= {"add.path", "remove.path",
                                      "add.partitionValues.key_value.key"}
    rng = random.Random(seed)
    if len(chunks) > 8:  # many row groups: a sample of the chunks, each column kept
        keep = {c[0]: c for c in chunks}  # the last row group's chunk of each column
        chunks = list(keep.values()) + rng.sample(chunks, 8 - len(keep))
    variants = []
    for name, start, size in chunks:
        for _ in range(n_flips):
            bad = bytearray(data)
            at = start + rng.randrange(size)
            width = rng.choice([1, 1, 2, 4, 8, 16])
            bad[at:at + width] = rng.randbytes(len(bad[at:at + width]))
            variants.append(bytes(bad))
        bad = bytearray(data)  # a whole chunk of 0xff
        bad[start:start + size] = b"\xff" * size
        variants.append(bytes(bad))
    for cut in (len(data) - 1, len(data) - 9, len(data) // 2, 200, 3):
        variants.append(data[:cut])
    fails = 0
    for v in variants:
        ck.write_bytes(v)
        argv = [str(dkharness.dk_binary()), "files", str(root), "--json", "--version",
                str(version)]
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=60,
                           env=dkharness._sanitizer_env())
        dkharness.check_process(argv, p.returncode, p.stderr)  # no signal, no sanitizer report
        assert p.returncode >= 0
        if p.returncode != 0:
            fails += 1
            assert ck.name in p.stderr, p.stderr
            assert p.stdout == "", p.stdout[:200]
        else:
            json.loads(p.stdout)
    ck.write_bytes(data)
    return len(variants), fails


@pytest.mark.dk_command("files")
@pytest.mark.parametrize("layout", ["dict-v1-gzip-rg3", "plain-v2-snappy-tiny", None])
def test_corrupt_corpus_checkpoint(originals, tmp_path, layout):
    orig, version, _, _ = originals["dv-partitioned"]
    root = tmp_path / "t"
    shutil.copytree(orig, root)
    ck = checkpoint_files(root, version)[0]
    if layout:
        rewrite(ck, LAYOUTS[layout])
    runs, fails = _corrupt_runs(root, version, ck, seed=7 + len(layout or ""), n_flips=6)
    assert fails >= 5, (runs, fails)


@pytest.mark.dk_command("files")
def test_corrupt_synthetic_checkpoint(synthetic, tmp_path):
    base, _ = synthetic
    root = tmp_path / "t"
    shutil.copytree(base, root)
    ck = checkpoint_files(root, SYN_VERSION)[0]
    rewrite(ck, SYN_LAYOUTS["dict-v2-zstd-rg700"])
    runs, fails = _corrupt_runs(root, SYN_VERSION, ck, seed=3, n_flips=2)
    assert fails >= 5, (runs, fails)
