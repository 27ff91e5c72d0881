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
    "MaxCommitRetriesExceeded",
]
