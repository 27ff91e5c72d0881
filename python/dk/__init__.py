"""dk: read Delta Lake tables from Python through libdk (a native C Delta kernel).

    import dk, pyarrow as pa
    t = dk.Table("/data/events")
    snap = t.snapshot()                  # or snapshot(version=3) / snapshot(timestamp=...)
    snap.version, snap.schema, snap.partition_columns, snap.properties, snap.protocol
    snap.history(), snap.files()
    pa.table(snap.scan(columns=["id"], filter="id > 10"))   # Arrow PyCapsule stream

Every object holding Arrow data implements the Arrow PyCapsule Interface
(``__arrow_c_schema__`` / ``__arrow_c_stream__``), so pyarrow, DuckDB, Polars and any other
consumer take dk's data without a copy. dk errors are raised as the exception classes below,
all subclasses of ``dk.DkError`` carrying dk's message (``.status``, ``.code``).
"""

from . import _dk
from ._dk import (  # noqa: F401
    Cancelled,
    ColumnNotFound,
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModification,
    ConcurrentTransactionException,
    Conflict,
    MaxCommitRetriesExceeded,
    MetadataChangedException,
    ProtocolChangedException,
    Transaction,
    CorruptTable,
    DkError,
    DkIOError,
    DkMemoryError,
    InternalError,
    InvalidArgument,
    Scan,
    Schema,
    Snapshot,
    Table,
    TableNotFound,
    UnsupportedFeature,
    VersionNotFound,
)

try:
    from ._build_info import BUILD_DIR, LINKAGE, SANITIZE  # noqa: F401
except ImportError:  # pragma: no cover - written by the build (python/CMakeLists.txt)
    BUILD_DIR, LINKAGE, SANITIZE = None, None, False

__version__ = "%d.%d.%d" % (_dk.DK_VERSION_NUMBER // 10000, _dk.DK_VERSION_NUMBER // 100 % 100,
                            _dk.DK_VERSION_NUMBER % 100)


def open_table(path, storage_options=None):
    """Same as ``Table(path, storage_options)``."""
    return Table(path, storage_options)


__all__ = [
    "Table", "Snapshot", "Schema", "Scan", "open_table",
    "DkError", "TableNotFound", "VersionNotFound", "ColumnNotFound", "UnsupportedFeature",
    "CorruptTable", "DkIOError", "InvalidArgument", "DkMemoryError", "Cancelled", "Conflict",
    "InternalError", "Transaction", "ConcurrentModification", "ConcurrentAppendException",
    "ConcurrentDeleteReadException", "ConcurrentDeleteDeleteException",
    "MetadataChangedException", "ProtocolChangedException", "ConcurrentTransactionException",
    "MaxCommitRetriesExceeded", "write_table",
]


def write_table(path, data, *, mode="error", partition_by=None, predicate=None,
                partition_overwrite="static", schema_mode=None, properties=None,
                target_file_size=None, app_id=None, app_version=None, commit_properties=None):
    """Writes ``data`` (any object with ``__arrow_c_stream__``: pyarrow Table or
    RecordBatchReader, Polars DataFrame, DuckDB relation, a dk scan) to the Delta table at
    ``path`` in one commit, as delta-spark's DataFrameWriter does.

    mode: "error" (the default; a new table), "append", "overwrite" or "ignore".
    partition_by: partition columns of a new table (must match an existing one's).
    predicate: with mode="overwrite", replaceWhere: only rows matching it are replaced, and every
    new row must match it. partition_overwrite="dynamic": replace exactly the partitions written.
    schema_mode: None, "merge" (add the data's new columns) or "overwrite" (with a full
    overwrite: new schema and partitioning). properties: table properties of a new table.
    target_file_size: bytes per data file. app_id/app_version: an idempotent write, skipped when
    the table already has that app at app_version or later. commit_properties: dict with
    "user_metadata" and "max_attempts".

    Returns {"version": committed version (-1 when nothing was written), "attempts": commit
    attempts, "checkpoint": 1 when a checkpoint followed}. Conflicts raise
    dk.ConcurrentModification subclasses.
    """
    import os
    if partition_overwrite not in ("static", "dynamic"):
        raise InvalidArgument("partition_overwrite must be 'static' or 'dynamic'")
    if (app_id is None) != (app_version is None):
        raise InvalidArgument("app_id and app_version go together")
    path = os.path.abspath(os.fspath(path))
    os.makedirs(path, exist_ok=True)
    if not hasattr(data, "__arrow_c_stream__"):
        raise TypeError("write_table: data must implement __arrow_c_stream__")
    stream = data
    # an existing table: bring the data to the table's Arrow types (pyarrow casts)
    if mode in ("append", "overwrite") and schema_mode != "overwrite":
        try:
            snap = Table(path).snapshot()
        except TableNotFound:
            snap = None
        if snap is not None:
            import pyarrow as pa
            target = pa.schema(snap.schema)
            tbl = pa.table(data) if not isinstance(data, pa.Table) else data
            names = {f.name.lower(): f for f in target}
            cols = []
            for name in tbl.column_names:
                f = names.get(name.lower())
                col = tbl[name]
                if f is not None and col.type != f.type:
                    col = col.cast(f.type)
                cols.append(col)
            stream = pa.table(cols, names=tbl.column_names)
    cp = commit_properties or {}
    return _dk._write_table(path, stream.__arrow_c_stream__(), mode=mode,
                            partition_by=list(partition_by or []), predicate=predicate,
                            dynamic=partition_overwrite == "dynamic", schema_mode=schema_mode,
                            properties=properties, target_file_size=int(target_file_size or 0),
                            app_id=app_id, app_version=-1 if app_version is None else app_version,
                            user_metadata=cp.get("user_metadata"),
                            max_attempts=int(cp.get("max_attempts", 0)))


_CODECS = ("snappy", "zstd", "gzip", "lz4_raw", "lz4", "none", "uncompressed")


def write_parquet(path, data, *, compression="snappy", row_group_size=None,
                  data_page_version="1.0", dictionary=True, **options):
    """Writes ``data`` to a new Parquet file at ``path`` with dk's native writer.

    ``data`` is any object with ``__arrow_c_stream__`` (pyarrow Table / RecordBatchReader,
    Polars DataFrame, DuckDB relation, dk.Scan) or ``__arrow_c_array__`` (a record batch or
    struct array). ``compression``: snappy (default), zstd, gzip, lz4_raw or none;
    ``row_group_size``: at most this many rows per row group (default: row groups of about
    128 MiB); ``data_page_version``: "1.0" (Spark's default) or "2.0"; ``dictionary``: dictionary
    encoding (falling back to PLAIN past 1 MiB of dictionary).

    Advanced keywords: compression_level, row_group_bytes, page_bytes, page_rows,
    dictionary_bytes, statistics, page_index, threads, metadata (dict of str -> str) and, for the
    returned Delta statistics, num_indexed_cols, stats_columns, string_prefix_length,
    timestamp_max_ceil.

    Returns ``{"num_rows", "file_size", "num_row_groups", "stats"}`` where ``stats`` is the
    file's Delta ``add.stats`` JSON. Nothing appears at ``path`` unless the write succeeds.
    """
    import os
    if compression not in _CODECS:
        raise InvalidArgument("compression must be one of snappy, zstd, gzip, lz4_raw, none")
    if str(data_page_version) not in ("1.0", "1", "2.0", "2"):
        raise InvalidArgument("data_page_version must be '1.0' or '2.0'")
    kw = dict(options)
    if row_group_size is not None:
        kw["row_group_rows"] = int(row_group_size)
    kw["dictionary"] = bool(dictionary)
    kw["data_page_version"] = 2 if str(data_page_version).startswith("2") else 1
    for k in ("num_indexed_cols",):
        if k in kw and kw[k] is not None:
            kw[k] = str(kw[k])
    path = os.path.abspath(os.fspath(path))
    if hasattr(data, "__arrow_c_stream__"):
        return _dk._write_parquet(path, data.__arrow_c_stream__(), compression=compression, **kw)
    if hasattr(data, "__arrow_c_array__"):
        schema, array = data.__arrow_c_array__()
        return _dk._write_parquet(path, None, schema, array, compression=compression, **kw)
    raise TypeError("write_parquet: data must implement __arrow_c_stream__ or __arrow_c_array__")


__all__.append("write_parquet")
