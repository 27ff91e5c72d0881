"""dkharness — shared helpers for dk's Python tests.

What lives here:
  * locating the repository, the build directory (``$DK_BUILD``, default ``build``) and the
    ``dk`` binary; ``run_dk(*args)`` runs it with a timeout and fails the calling test on a
    crash signal or a sanitizer report;
  * the shared test corpus (``$DK_TESTDATA`` or ``<repo>/../shared/testdata``):
    ``load_manifest()``, ``cases()``, ``case_by_id()``, ``expected_rows()``, ``copy_table()``;
  * the *manifest value encoding* (``manifest.json`` -> ``encoding``) and two canonicalisers
    into it: ``canon_arrow(...)`` for pyarrow tables/arrays and ``canon_dk_jsonl(...)`` for
    dk's JSONL row encoding, both driven by a logical type (Delta schema or Arrow type);
  * ``assert_rows_equal(actual, expected)``: multiset comparison with a readable diff.

The logical type used by the canonicalisers is a small tuple tree (see ``T_*`` below) built
from either a Delta schema (``delta_type``) or an Arrow type/schema (``arrow_type``).
"""

from __future__ import annotations

import base64
import collections
import decimal
import functools
import json
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

# ---------------------------------------------------------------------------------------------
# Locations
# ---------------------------------------------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    """The CMake build directory: ``$DK_BUILD`` (absolute, or relative to the repo root)."""
    b = Path(os.environ.get("DK_BUILD", "build"))
    return b if b.is_absolute() else REPO_ROOT / b


def dk_binary() -> Path:
    """Path of the ``dk`` CLI inside the build directory (may not exist)."""
    return build_dir() / "dk"


def testdata_dir() -> Path:
    """The shared, read-only test corpus."""
    env = os.environ.get("DK_TESTDATA")
    return Path(env) if env else (REPO_ROOT / ".." / "shared" / "testdata").resolve()


# ---------------------------------------------------------------------------------------------
# Running dk
# ---------------------------------------------------------------------------------------------

DEFAULT_TIMEOUT = float(os.environ.get("DK_TEST_TIMEOUT", "120"))

# Markers of a sanitizer report on stderr (ASan, LSan, UBSan, MSan, TSan).
_SANITIZER_RE = re.compile(
    r"(ERROR: (Address|Leak|Memory|Thread)Sanitizer"
    r"|SUMMARY: (Address|Leak|Memory|Thread|UndefinedBehavior)Sanitizer"
    r"|WARNING: (Memory|Thread)Sanitizer"
    r"|: runtime error: )")

# stderr texts by which a dk binary says a (sub)command is not there yet.
_MISSING_CMD_RE = re.compile(
    r"(unknown (sub)?command|not built yet|not implemented|unsupported command)", re.I)


class HarnessFailure(AssertionError):
    """Raised (outside pytest) when dk crashes, times out or reports a sanitizer error."""


def _fail(msg: str) -> None:
    try:
        import pytest
    except ImportError:  # pragma: no cover - pytest is always present in the venv
        raise HarnessFailure(msg)
    pytest.fail(msg, pytrace=False)


def sqlite_host_env() -> dict:
    """Environment for a host process (Debian's /usr/bin/python3) loading dk_sqlite.so: a
    sanitizer build of the extension needs the ASan/UBSan runtimes preloaded into the
    uninstrumented host. A host that starts other programs should drop LD_PRELOAD for them."""
    env = dict(os.environ)
    cache = build_dir() / "CMakeCache.txt"
    if cache.exists() and "DK_SANITIZE:BOOL=ON" in cache.read_text():
        libs = []
        for lib in ("libasan.so", "libubsan.so"):
            p = subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True, text=True)
            if p.returncode == 0 and os.path.isabs(p.stdout.strip()):
                libs.append(p.stdout.strip())
        env["LD_PRELOAD"] = " ".join(libs)
        env["ASAN_OPTIONS"] = "detect_leaks=0"  # the host interpreter's own allocations
    return env


def _sanitizer_env() -> dict:
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    return env


def check_process(argv: Sequence[str], rc: int, stderr: str) -> None:
    """Fails the test when a finished process died by a signal or printed a sanitizer report."""
    cmd = " ".join(map(str, argv))
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        _fail(f"`{cmd}` crashed with {name}\n--- stderr ---\n{stderr[-4000:]}")
    m = _SANITIZER_RE.search(stderr)
    if m:
        start = max(0, m.start() - 200)
        _fail(f"`{cmd}` produced a sanitizer report (rc={rc}):\n{stderr[start:start + 6000]}")


def run_dk(*args: Any, timeout: float | None = None, input: str | bytes | None = None,
           binary: bool = False, cwd: str | os.PathLike | None = None,
           check: bool = False) -> tuple[int, Any, Any]:
    """Runs ``dk ARGS...`` and returns ``(rc, stdout, stderr)`` (str, or bytes if ``binary``).

    Fails the calling test when dk is missing, exceeds ``timeout`` seconds, dies by a signal
    or prints an ASan/UBSan report. With ``check=True`` a non-zero rc fails the test too.
    """
    exe = dk_binary()
    if not exe.exists():
        _fail(f"dk binary not found at {exe} (build first, or set DK_BUILD)")
    argv = [str(exe), *map(str, args)]
    if isinstance(input, str):
        input = input.encode()
    try:
        p = subprocess.run(argv, input=input, capture_output=True, cwd=cwd,
                           timeout=timeout or DEFAULT_TIMEOUT, env=_sanitizer_env())
    except subprocess.TimeoutExpired as e:
        err = (e.stderr or b"").decode("utf-8", "replace")
        _fail(f"`{' '.join(argv)}` timed out after {e.timeout}s\n--- stderr ---\n{err[-4000:]}")
        raise  # unreachable
    err = p.stderr.decode("utf-8", "replace")
    check_process(argv, p.returncode, err)
    if check and p.returncode != 0:
        _fail(f"`{' '.join(argv)}` exited {p.returncode}\n--- stderr ---\n{err[-4000:]}")
    if binary:
        return p.returncode, p.stdout, p.stderr
    return p.returncode, p.stdout.decode("utf-8", "replace"), err


@functools.lru_cache(maxsize=None)
def dk_has_command(*words: str) -> bool:
    """True when the built dk knows the (sub)command ``words`` (e.g. ``("parquet", "cat")``).

    Probes ``dk WORDS...`` without further arguments; a binary lacking the command says
    "unknown command"/"not built yet"/"not implemented" on stderr (usage errors are fine).
    """
    exe = dk_binary()
    if not exe.exists():
        return False
    try:
        p = subprocess.run([str(exe), *words], capture_output=True, timeout=30,
                           stdin=subprocess.DEVNULL, env=_sanitizer_env())
    except subprocess.TimeoutExpired:
        return True  # it exists; the test itself will report the hang
    return not _MISSING_CMD_RE.search(p.stderr.decode("utf-8", "replace"))


def require_dk_command(*words: str) -> None:
    """Skips the calling test (with the reason) when the dk binary lacks the command."""
    import pytest
    if not dk_binary().exists():
        _fail(f"dk binary not found at {dk_binary()} (build first, or set DK_BUILD)")
    if not dk_has_command(*words):
        pytest.skip(f"dk binary lacks `dk {' '.join(words)}` (not implemented yet)")


# ---------------------------------------------------------------------------------------------
# Test corpus
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def load_manifest() -> dict:
    """The parsed ``manifest.json`` of the shared corpus."""
    with open(testdata_dir() / "manifest.json", encoding="utf-8") as f:
        return json.load(f)


def cases(kind: str | None = None) -> list[dict]:
    """Manifest cases, optionally only those of one ``kind`` ("read", "snapshot", ...)."""
    return [c for c in load_manifest()["cases"] if kind is None or c["kind"] == kind]


def case_by_id(case_id: str) -> dict:
    for c in load_manifest()["cases"]:
        if c["id"] == case_id:
            return c
    raise KeyError(f"no manifest case {case_id!r}")


def _as_case(case: dict | str) -> dict:
    if isinstance(case, dict):
        return case
    if "@" in case:
        return case_by_id(case)
    return {"table": case}


def table_path(case: dict | str) -> Path:
    """Absolute path of the (read-only!) table of a case, id or table-relative path."""
    return testdata_dir() / _as_case(case)["table"]


def case_schema(case: dict | str) -> tuple:
    """The logical type (T_STRUCT) of a case's schema_string."""
    return delta_type(_as_case(case)["schema_string"])


def expected_rows(case: dict | str) -> list[dict]:
    """Rows of a case's ``expected*.jsonl[.gz]`` (manifest encoding, normalised by schema)."""
    c = _as_case(case)
    path = testdata_dir() / c["expected"]
    if path.suffix == ".gz":
        import gzip
        with gzip.open(path, "rt", encoding="utf-8") as f:
            rows = parse_jsonl(f.read())
    else:
        with open(path, encoding="utf-8") as f:
            rows = parse_jsonl(f.read())
    if c.get("schema_string"):
        t = delta_type(c["schema_string"])
        cols = c.get("columns", "all")
        if cols != "all":  # a projection: the listed top-level columns, in that order
            fields = dict(t[1])
            t = ("struct", tuple((n, fields[n]) for n in cols if n in fields))
        return canon_manifest_rows(rows, t)
    return rows


_TMP_ROOT: list[Path] = []


def copy_table(case: dict | str, dest: str | os.PathLike | None = None) -> Path:
    """Copies a case's table to a fresh writable directory and returns the copy's path.

    ``dest`` is a parent directory (e.g. pytest's ``tmp_path``); default: a temp directory
    removed at interpreter exit. Symlinks are copied as the files they point to.
    """
    import atexit
    src = table_path(case)
    if dest is None:
        if not _TMP_ROOT:
            _TMP_ROOT.append(Path(tempfile.mkdtemp(prefix="dk-tables-")))
            atexit.register(shutil.rmtree, _TMP_ROOT[0], True)
        dest = tempfile.mkdtemp(dir=_TMP_ROOT[0])
    out = Path(dest) / src.name
    n = 1
    while out.exists():
        out = Path(dest) / f"{src.name}-{n}"
        n += 1
    shutil.copytree(src, out)
    return out


# ---------------------------------------------------------------------------------------------
# Logical types
# ---------------------------------------------------------------------------------------------
# ("prim", name)  name in byte short integer long float double boolean string binary date
#                 timestamp timestamp_ntz null
# ("decimal", precision, scale)
# ("array", element)   ("map", key, value)   ("struct", ((name, type), ...))   ("variant",)

PRIMS = {"byte", "short", "integer", "long", "float", "double", "boolean", "string", "binary",
         "date", "timestamp", "timestamp_ntz", "null"}
INTEGERS = {"byte", "short", "integer", "long"}
_INT_RANGE = {"byte": 8, "short": 16, "integer": 32, "long": 64}
_DEC_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")


def delta_type(t: Any) -> tuple:
    """Logical type of a Delta schema (JSON text or parsed) or any Delta type node."""
    if isinstance(t, str):
        s = t.strip()
        if s.startswith("{"):
            return delta_type(json.loads(s))
        if s in PRIMS:
            return ("prim", s)
        if s in ("variant",):
            return ("variant",)
        m = _DEC_RE.match(s)
        if m:
            return ("decimal", int(m.group(1)), int(m.group(2)))
        if s == "decimal":
            return ("decimal", 10, 0)
        raise ValueError(f"unknown Delta type {s!r}")
    if isinstance(t, dict):
        k = t.get("type")
        if k == "struct":
            return ("struct", tuple((f["name"], delta_type(f["type"])) for f in t["fields"]))
        if k == "array":
            return ("array", delta_type(t["elementType"]))
        if k == "map":
            return ("map", delta_type(t["keyType"]), delta_type(t["valueType"]))
        return delta_type(k)
    raise ValueError(f"unknown Delta type node {t!r}")


def arrow_type(t: Any) -> tuple:
    """Logical type of a pyarrow DataType, Schema, Field, Table or Array."""
    import pyarrow as pa
    import pyarrow.types as pt
    if isinstance(t, (pa.Table, pa.RecordBatch)):
        t = t.schema
    if isinstance(t, (pa.Array, pa.ChunkedArray)):
        t = t.type
    if isinstance(t, pa.Schema):
        return ("struct", tuple((f.name, arrow_type(f.type)) for f in t))
    if isinstance(t, pa.Field):
        t = t.type
    if pt.is_dictionary(t):
        return arrow_type(t.value_type)
    if isinstance(t, pa.ExtensionType):
        return arrow_type(t.storage_type)
    if pt.is_int8(t):
        return ("prim", "byte")
    if pt.is_int16(t) or pt.is_uint8(t):
        return ("prim", "short")
    if pt.is_int32(t) or pt.is_uint16(t):
        return ("prim", "integer")
    if pt.is_integer(t):
        return ("prim", "long")
    if pt.is_float16(t) or pt.is_float32(t):
        return ("prim", "float")
    if pt.is_float64(t):
        return ("prim", "double")
    if pt.is_boolean(t):
        return ("prim", "boolean")
    if pt.is_string(t) or pt.is_large_string(t) or pt.is_string_view(t):
        return ("prim", "string")
    if (pt.is_binary(t) or pt.is_large_binary(t) or pt.is_fixed_size_binary(t)
            or pt.is_binary_view(t)) and not pt.is_decimal(t):
        return ("prim", "binary")
    if pt.is_decimal(t):
        return ("decimal", t.precision, t.scale)
    if pt.is_date(t):
        return ("prim", "date")
    if pt.is_timestamp(t):
        return ("prim", "timestamp" if t.tz is not None else "timestamp_ntz")
    if pt.is_null(t):
        return ("prim", "null")
    if pt.is_map(t):
        return ("map", arrow_type(t.key_type), arrow_type(t.item_type))
    if (pt.is_list(t) or pt.is_large_list(t) or pt.is_fixed_size_list(t)
            or pt.is_list_view(t) or pt.is_large_list_view(t)):
        return ("array", arrow_type(t.value_type))
    if pt.is_struct(t):
        return ("struct", tuple((t.field(i).name, arrow_type(t.field(i).type))
                                for i in range(t.num_fields)))
    raise ValueError(f"unsupported Arrow type {t}")


# ---------------------------------------------------------------------------------------------
# Manifest encoding: scalar formatters shared by both canonicalisers
# ---------------------------------------------------------------------------------------------

def _civil_from_days(z: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day count since 1970-01-01."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + (m <= 2), m, d)


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    mp = m - 3 if m > 2 else m + 9
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _valid_ymd(y: int, m: int, d: int) -> bool:
    if not 1 <= m <= 12 or d < 1:
        return False
    return _civil_from_days(_days_from_civil(y, m, d)) == (y, m, d)


def format_date(days: int) -> str:
    """Manifest text of a date given as days since the epoch."""
    y, m, d = _civil_from_days(int(days))
    ys = f"{y:04d}" if y >= 0 else f"-{-y:04d}"
    return f"{ys}-{m:02d}-{d:02d}"


def format_decimal(unscaled: int, scale: int) -> str:
    """Plain-notation text with exactly ``scale`` fractional digits."""
    neg = unscaled < 0
    digits = str(abs(unscaled))
    if scale > 0:
        digits = digits.rjust(scale + 1, "0")
        text = digits[:-scale] + "." + digits[-scale:]
    else:
        text = digits + "0" * (-scale)
    return "-" + text if neg else text


def _canon_float(v: float, single: bool) -> Any:
    if single:
        import struct
        v = struct.unpack("<f", struct.pack("<f", v))[0] if math.isfinite(v) else v
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return float(v)


def _map_sort(pairs: list) -> list:
    return sorted(pairs, key=lambda kv: canonical_text(kv[0]))


_CANON_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                  allow_nan=False)


def canonical_text(v: Any) -> str:
    """The canonical JSON text of an encoded value (object keys sorted, compact)."""
    return _CANON_ENCODER.encode(v)


# ---------------------------------------------------------------------------------------------
# (a) pyarrow -> manifest encoding
# ---------------------------------------------------------------------------------------------

_TS_PER_US = {"s": (1_000_000, 1), "ms": (1000, 1), "us": (1, 1), "ns": (1, 1000)}


def canon_arrow_array(arr: Any, t: tuple | None = None) -> list:
    """Encodes every slot of a pyarrow Array/ChunkedArray in the manifest encoding.

    ``t`` is the logical type (Delta or Arrow derived); default: from the Arrow type. Values
    are taken from the Arrow buffers' logical values (not via Python datetime objects), so
    dates and timestamps outside Python's datetime range work too.
    """
    import pyarrow as pa
    if isinstance(arr, pa.ChunkedArray):
        out: list = []
        for ch in arr.chunks:
            out.extend(canon_arrow_array(ch, t))
        return out
    if t is None:
        t = arrow_type(arr.type)
    return _canon_arrow(arr, t)


def _canon_arrow(arr: Any, t: tuple) -> list:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.types as pt
    at = arr.type
    if pt.is_dictionary(at):
        arr = arr.dictionary_decode()
        at = arr.type
    if isinstance(at, pa.ExtensionType):
        arr = arr.storage
        at = arr.type
    n = len(arr)
    valid = arr.is_valid().to_pylist() if arr.null_count else [True] * n
    kind = t[0]
    if kind == "prim":
        name = t[1]
        if name == "null" or pt.is_null(at):
            return [None] * n
        if name in INTEGERS:
            return arr.to_pylist()
        if name in ("float", "double"):
            return [None if v is None else _canon_float(float(v), name == "float")
                    for v in arr.to_pylist()]
        if name == "boolean":
            return arr.to_pylist()
        if name == "string":
            return arr.to_pylist()
        if name == "binary":
            return [None if v is None else bytes(v).hex() for v in arr.to_pylist()]
        if name == "date":
            if pt.is_date64(at):
                ms = arr.cast(pa.int64()).to_pylist()
                return [None if v is None else format_date(v // 86_400_000) for v in ms]
            return [None if v is None else format_date(v)
                    for v in arr.cast(pa.int32()).to_pylist()]
        if name in ("timestamp", "timestamp_ntz"):
            if not pt.is_timestamp(at):
                raise ValueError(f"Arrow type {at} is not a timestamp")
            mul, div = _TS_PER_US[at.unit]
            raw = arr.cast(pa.int64()).to_pylist()
            return [None if v is None else (v * mul) // div for v in raw]
        raise ValueError(f"unhandled primitive {name}")
    if kind == "decimal":
        scale = t[2]
        out = []
        for v in arr.to_pylist():
            out.append(None if v is None else format_decimal(_unscaled(v, scale), scale))
        return out
    if kind == "variant":
        return arr.to_pylist()
    if kind == "struct":
        if not pt.is_struct(at):
            raise ValueError(f"Arrow type {at} is not a struct")
        cols = []
        for name, ft in t[1]:
            idx = at.get_field_index(name)
            if idx < 0:
                raise ValueError(f"struct has no field {name!r}: {at}")
            cols.append((name, _canon_arrow(arr.field(idx), ft)))
        return [{name: c[i] for name, c in cols} if valid[i] else None for i in range(n)]
    if kind in ("array", "map"):
        if pt.is_fixed_size_list(at):
            arr = arr.cast(pa.list_(at.value_field))
            at = arr.type
        if pt.is_list_view(at) or pt.is_large_list_view(at):
            arr = arr.cast(pa.large_list(at.value_field))
            at = arr.type
        offsets = arr.offsets.to_pylist()
        values = arr.values
        if kind == "array":
            vals = _canon_arrow(values, t[1])
            return [vals[offsets[i]:offsets[i + 1]] if valid[i] else None for i in range(n)]
        keys = _canon_arrow(values.field(0), t[1])
        items = _canon_arrow(values.field(1), t[2])
        return [_map_sort([[keys[j], items[j]] for j in range(offsets[i], offsets[i + 1])])
                if valid[i] else None for i in range(n)]
    raise ValueError(f"unhandled logical type {t}")


def _unscaled(v: decimal.Decimal, scale: int) -> int:
    """Exact unscaled integer of a Decimal at ``scale`` (no context rounding)."""
    sign, digits, exp = v.as_tuple()
    n = int("".join(map(str, digits)) or "0")
    shift = exp + scale
    if shift >= 0:
        n *= 10 ** shift
    else:
        q, r = divmod(n, 10 ** -shift)
        if r:
            raise ValueError(f"decimal {v} has more than {scale} fractional digits")
        n = q
    return -n if sign else n


def _logical(schema: Any) -> tuple:
    """Logical type of a logical tuple, a pyarrow Schema/DataType, or a Delta schema."""
    if isinstance(schema, tuple):
        return schema
    if isinstance(schema, (str, dict)):
        return delta_type(schema)
    return arrow_type(schema)


def canon_arrow(table: Any, schema: Any = None) -> list[dict]:
    """Rows of a pyarrow Table/RecordBatch (or struct array) in the manifest encoding.

    ``schema``: optional Delta schema (JSON text/dict) or logical struct type; its field
    order and types drive the encoding (e.g. Delta ``timestamp`` for an INT96 column that
    Arrow reads as a zone-less timestamp). Default: the Arrow schema.
    """
    import pyarrow as pa
    if schema is not None and not isinstance(schema, tuple):
        schema = _logical(schema)
    if isinstance(table, (pa.Array, pa.ChunkedArray)):
        t = schema or arrow_type(table.type)
        return canon_arrow_array(table, t)
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    t = schema or arrow_type(table.schema)
    cols = []
    for name, ft in t[1]:
        if name not in table.column_names:
            raise ValueError(f"table has no column {name!r} (has {table.column_names})")
        cols.append((name, canon_arrow_array(table.column(name), ft)))
    return [{name: c[i] for name, c in cols} for i in range(table.num_rows)]


# ---------------------------------------------------------------------------------------------
# (b) dk JSONL -> manifest encoding
# ---------------------------------------------------------------------------------------------

class EncodingError(ValueError):
    """A value in dk's JSONL does not follow dk's row encoding for its type."""


def _dup_check(pairs: list) -> dict:
    d: dict = {}
    for k, v in pairs:
        if k in d:
            raise EncodingError(f"duplicate JSON object key {k!r}")
        d[k] = v
    return d


def parse_jsonl(text: str) -> list:
    """Parses JSON Lines (blank lines ignored); duplicate object keys are an error."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line, object_pairs_hook=_dup_check))
        except (json.JSONDecodeError, EncodingError) as e:
            raise EncodingError(f"line {lineno}: {e}: {line[:200]!r}") from None
    return out


_TS_RE = re.compile(r"^(-?\d{4,})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z?)$")
_DATE_RE = re.compile(r"^(-?\d{4,})-(\d{2})-(\d{2})$")
_DEC_TEXT_RE = re.compile(r"^-?\d+(\.\d+)?$")
_SPECIAL_FLOATS = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity",
                   "inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"}


def _err(path: str, msg: str, v: Any) -> EncodingError:
    return EncodingError(f"{path or '<value>'}: {msg}, got {json.dumps(v)[:120]}")


def parse_timestamp(text: str, ntz: bool, path: str = "") -> int:
    """Microseconds of dk's ``YYYY-MM-DDTHH:MM:SS.ffffff[Z]`` (``Z`` iff not ntz)."""
    m = _TS_RE.match(text) if isinstance(text, str) else None
    if not m:
        raise _err(path, "expected an ISO-8601 timestamp YYYY-MM-DDTHH:MM:SS.ffffff[Z]", text)
    y, mo, d, hh, mi, ss = (int(m.group(i)) for i in range(1, 7))
    frac, z = m.group(7) or "", m.group(8)
    if ntz and z:
        raise _err(path, "timestamp_ntz must not carry a 'Z'", text)
    if not ntz and not z:
        raise _err(path, "timestamp must end in 'Z'", text)
    if not _valid_ymd(y, mo, d) or hh > 23 or mi > 59 or ss > 59:
        raise _err(path, "invalid calendar date/time", text)
    nanos = int(frac.ljust(9, "0")) if frac else 0  # sub-microsecond digits: floored, as
    secs = _days_from_civil(y, mo, d) * 86400 + hh * 3600 + mi * 60 + ss  # canon_arrow does
    return secs * 1_000_000 + nanos // 1000


def parse_date(text: str, path: str = "") -> str:
    m = _DATE_RE.match(text) if isinstance(text, str) else None
    if not m or not _valid_ymd(int(m.group(1)), int(m.group(2)), int(m.group(3))):
        raise _err(path, "expected a date YYYY-MM-DD", text)
    return format_date(_days_from_civil(int(m.group(1)), int(m.group(2)), int(m.group(3))))


def canon_dk_value(v: Any, t: tuple, path: str = "") -> Any:
    """Converts one value of dk's JSONL encoding of logical type ``t`` to the manifest one.

    Raises EncodingError naming ``path`` when the value does not follow dk's encoding.
    """
    if v is None:
        return None
    kind = t[0]
    if kind == "prim":
        name = t[1]
        if name in INTEGERS:
            if isinstance(v, bool) or not isinstance(v, int):
                raise _err(path, f"expected a JSON integer ({name})", v)
            bits = _INT_RANGE[name]
            if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
                raise _err(path, f"integer out of range for {name}", v)
            return v
        if name in ("float", "double"):
            if isinstance(v, str) and v in _SPECIAL_FLOATS:
                return _SPECIAL_FLOATS[v]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise _err(path, f"expected a JSON number ({name})", v)
            return _canon_float(float(v), name == "float")
        if name == "boolean":
            if not isinstance(v, bool):
                raise _err(path, "expected true/false", v)
            return v
        if name == "string":
            if not isinstance(v, str):
                raise _err(path, "expected a JSON string", v)
            return v
        if name == "binary":
            if not isinstance(v, str):
                raise _err(path, "expected base64 text", v)
            try:
                return base64.b64decode(v, validate=True).hex()
            except ValueError:
                raise _err(path, "invalid base64", v) from None
        if name == "date":
            return parse_date(v, path)
        if name in ("timestamp", "timestamp_ntz"):
            return parse_timestamp(v, name == "timestamp_ntz", path)
        if name == "null":
            raise _err(path, "null-typed column holds a value", v)
        raise ValueError(f"unhandled primitive {name}")
    if kind == "decimal":
        scale = t[2]
        if not isinstance(v, str) or not _DEC_TEXT_RE.match(v):
            raise _err(path, f"expected a decimal string with {scale} fractional digits", v)
        frac = v.split(".")[1] if "." in v else ""
        if len(frac) != max(scale, 0):
            raise _err(path, f"decimal must have exactly {scale} fractional digits", v)
        unscaled = int(v.replace(".", "").replace("-", "") or "0")
        digits = len(str(unscaled))
        if unscaled and digits > t[1]:
            raise _err(path, f"more than {t[1]} significant digits", v)
        return format_decimal(-unscaled if v.startswith("-") else unscaled, scale)
    if kind == "variant":
        return v
    if kind == "array":
        if not isinstance(v, list):
            raise _err(path, "expected a JSON array", v)
        return [canon_dk_value(x, t[1], f"{path}[{i}]") for i, x in enumerate(v)]
    if kind == "struct":
        if not isinstance(v, dict):
            raise _err(path, "expected a JSON object (struct)", v)
        names = [n for n, _ in t[1]]
        extra = set(v) - set(names)
        missing = [n for n in names if n not in v]
        if extra or missing:
            raise _err(path, f"struct fields differ (missing {missing}, unexpected "
                             f"{sorted(extra)})", v)
        return {n: canon_dk_value(v[n], ft, f"{path}.{n}" if path else n) for n, ft in t[1]}
    if kind == "map":
        kt, vt = t[1], t[2]
        if kt == ("prim", "string"):
            if not isinstance(v, dict):
                raise _err(path, "expected a JSON object (map with string keys)", v)
            pairs = [[k, canon_dk_value(x, vt, f"{path}[{k!r}]")] for k, x in v.items()]
        else:
            if not isinstance(v, list) or not all(isinstance(p, list) and len(p) == 2
                                                  for p in v):
                raise _err(path, "expected an array of [key, value] pairs", v)
            pairs = [[canon_dk_value(k, kt, f"{path}.key[{i}]"),
                      canon_dk_value(x, vt, f"{path}.value[{i}]")] for i, (k, x) in enumerate(v)]
            if any(k is None for k, _ in pairs):
                raise _err(path, "map key is null", v)
        return _map_sort(pairs)
    raise ValueError(f"unhandled logical type {t}")


def canon_dk_jsonl(text_or_rows: str | Iterable[dict], schema: Any) -> list[dict]:
    """Rows of dk's JSONL output (text or parsed rows) converted to the manifest encoding.

    ``schema``: Delta schema (JSON text/dict), pyarrow Schema, or a logical struct type.
    Every row must have exactly the schema's top-level fields.
    """
    t = _logical(schema)
    rows = parse_jsonl(text_or_rows) if isinstance(text_or_rows, str) else list(text_or_rows)
    out = []
    for i, r in enumerate(rows):
        try:
            out.append(canon_dk_value(r, t, ""))
        except EncodingError as e:
            raise EncodingError(f"row {i}: {e}") from None
    return out


def canon_manifest_value(v: Any, t: tuple) -> Any:
    """Normalises a value already in manifest encoding (e.g. int 1 for a double -> 1.0)."""
    if v is None:
        return None
    kind = t[0]
    if kind == "prim" and t[1] in ("float", "double"):
        if isinstance(v, str):
            return _SPECIAL_FLOATS.get(v, v)
        return _canon_float(float(v), False)
    if kind == "array" and isinstance(v, list):
        return [canon_manifest_value(x, t[1]) for x in v]
    if kind == "struct" and isinstance(v, dict):
        types = dict(t[1])
        return {k: canon_manifest_value(x, types[k]) if k in types else x for k, x in v.items()}
    if kind == "map" and isinstance(v, list):
        return _map_sort([[canon_manifest_value(k, t[1]), canon_manifest_value(x, t[2])]
                          for k, x in v])
    return v


def canon_manifest_rows(rows: Iterable[dict], schema: Any) -> list[dict]:
    t = schema if isinstance(schema, tuple) else delta_type(schema)
    return [canon_manifest_value(r, t) for r in rows]


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------

def _field_diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(dict.fromkeys([*a, *b])):
            p = f"{path}.{k}" if path else str(k)
            if k not in a:
                out.append(f"{p}: missing in actual (expected {canonical_text(b[k])})")
            elif k not in b:
                out.append(f"{p}: unexpected in actual ({canonical_text(a[k])})")
            else:
                out.extend(_field_diff(a[k], b[k], p))
        return out
    if canonical_text(a) != canonical_text(b):
        return [f"{path or '<row>'}: actual {canonical_text(a)[:200]} != expected "
                f"{canonical_text(b)[:200]}"]
    return []


def rows_diff(actual: Sequence[Any], expected: Sequence[Any], ordered: bool = False,
              limit: int = 5) -> str | None:
    """None when equal (as multisets, or as lists if ``ordered``), else a readable diff."""
    at = [canonical_text(r) for r in actual]
    et = [canonical_text(r) for r in expected]
    if ordered:
        if at == et:
            return None
        lines = [f"rows differ (ordered): actual {len(at)} rows, expected {len(et)} rows"]
        shown = 0
        for i in range(max(len(at), len(et))):
            a = at[i] if i < len(at) else None
            e = et[i] if i < len(et) else None
            if a != e:
                lines.append(f"  row {i}:")
                if a is None or e is None:
                    lines.append(f"    actual   {a}\n    expected {e}")
                else:
                    lines.extend("    " + d for d in _field_diff(json.loads(a), json.loads(e)))
                shown += 1
                if shown >= limit:
                    break
        return "\n".join(lines)
    ca, ce = collections.Counter(at), collections.Counter(et)
    if ca == ce:
        return None
    only_a = list((ca - ce).elements())
    only_e = list((ce - ca).elements())
    lines = [f"rows differ (as multisets): actual {len(at)} rows, expected {len(et)} rows; "
             f"{len(only_e)} expected rows missing, {len(only_a)} unexpected rows"]
    # Pair each missing expected row with the unexpected row sharing most fields.
    pool = [json.loads(x) for x in only_a]
    for n, etext in enumerate(only_e[:limit]):
        e = json.loads(etext)
        best, score = None, -1
        for i, a in enumerate(pool):
            if isinstance(a, dict) and isinstance(e, dict):
                s = sum(1 for k in e if k in a and canonical_text(a[k]) == canonical_text(e[k]))
            else:
                s = 0
            if s > score:
                best, score = i, s
        lines.append(f"  expected row {etext[:300]}")
        if best is not None and isinstance(e, dict) and score > 0:
            a = pool.pop(best)
            lines.append("    closest actual row differs in:")
            lines.extend("      " + d for d in _field_diff(a, e))
        else:
            lines.append("    (no similar actual row)")
    if len(only_e) > limit:
        lines.append(f"  ... {len(only_e) - limit} more missing expected rows")
    if pool:
        lines.append(f"  unexpected actual rows ({len(pool)} unpaired, first {limit}):")
        lines.extend("    " + canonical_text(a)[:300] for a in pool[:limit])
    return "\n".join(lines)


def assert_rows_equal(actual: Sequence[Any], expected: Sequence[Any], ordered: bool = False,
                      limit: int = 5) -> None:
    """Asserts two row lists (manifest encoding) are equal as multisets (or ordered)."""
    d = rows_diff(actual, expected, ordered=ordered, limit=limit)
    if d is not None:
        raise AssertionError(d)
