package io.dk.spark;

/**
 * A libdk error surfaced in Java: dk's message plus a stable error class derived from dk's
 * status and the call that failed.
 */
public class DkException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Stable error classes. */
  public enum ErrorClass {
    DK_TABLE_NOT_FOUND, DK_VERSION_NOT_FOUND, DK_TIMESTAMP_OUT_OF_RANGE,
    DK_UNSUPPORTED_FEATURE, DK_CORRUPT_TABLE, DK_INVALID_ARGUMENT, DK_IO_ERROR, DK_INTERNAL,
    /** a schema mismatch between the data and the table (no mergeSchema / overwriteSchema) */
    DK_SCHEMA_MISMATCH,
    /** a write to a table that cannot be written (time travel, a path with no table) */
    DK_TABLE_READ_ONLY,
    /** the table already exists (CREATE TABLE without IF NOT EXISTS / OR REPLACE) */
    DK_TABLE_ALREADY_EXISTS,
    // a concurrent commit won (dk_conflict_kind; the message starts with delta-spark's name)
    DK_CONCURRENT_APPEND, DK_CONCURRENT_DELETE_READ, DK_CONCURRENT_DELETE_DELETE,
    DK_METADATA_CHANGED, DK_PROTOCOL_CHANGED, DK_CONCURRENT_TRANSACTION, DK_MAX_COMMIT_RETRIES,
    DK_CONFLICT
  }

  // Native status codes (include/dk/common.h) and call contexts (dk_jni.c).
  static final int NOT_FOUND = 4, CORRUPT = 5, UNSUPPORTED = 6, INVALID = 2, IO = 3,
      CONFLICT = 7, OUT_OF_RANGE = 11;
  /** context of a DK_CONFLICT: CTX_CONFLICT_BASE + dk_conflict_kind (dk_jni.c) */
  static final int CTX_CONFLICT_BASE = 100;
  static final int CTX_TABLE_OPEN = 1, CTX_SNAPSHOT_LATEST = 2, CTX_SNAPSHOT_VERSION = 3,
      CTX_SNAPSHOT_TIMESTAMP = 4;

  private final ErrorClass errorClass;
  private final int status;

  /** Called from native code. */
  DkException(int status, int context, String message) {
    this(status == INVALID && message != null && (message.contains("DELTA_METADATA_MISMATCH")
            || message.contains("schema mismatch")) ? ErrorClass.DK_SCHEMA_MISMATCH
            : classify(status, context), status, message);
  }

  DkException(ErrorClass cls, int status, String message) {
    super("[" + cls + "] " + message);
    this.errorClass = cls;
    this.status = status;
  }

  public ErrorClass getErrorClass() {
    return errorClass;
  }

  /** dk_status value of the native failure. */
  public int getStatus() {
    return status;
  }

  /** Whether a commit lost to a concurrent one (any conflict class). */
  public boolean isConflict() { return status == CONFLICT; }

  static ErrorClass classify(int status, int context) {
    switch (status) {
      case CONFLICT:
        switch (context - CTX_CONFLICT_BASE) {
          case 1: return ErrorClass.DK_CONCURRENT_APPEND;
          case 2: return ErrorClass.DK_CONCURRENT_DELETE_READ;
          case 3: return ErrorClass.DK_CONCURRENT_DELETE_DELETE;
          case 4: return ErrorClass.DK_METADATA_CHANGED;
          case 5: return ErrorClass.DK_PROTOCOL_CHANGED;
          case 6: return ErrorClass.DK_CONCURRENT_TRANSACTION;
          case 7: return ErrorClass.DK_MAX_COMMIT_RETRIES;
          default: return ErrorClass.DK_CONFLICT;
        }
      case NOT_FOUND:
        if (context == CTX_SNAPSHOT_VERSION) return ErrorClass.DK_VERSION_NOT_FOUND;
        if (context == CTX_TABLE_OPEN || context == CTX_SNAPSHOT_LATEST
            || context == CTX_SNAPSHOT_TIMESTAMP) return ErrorClass.DK_TABLE_NOT_FOUND;
        return ErrorClass.DK_INVALID_ARGUMENT; // e.g. an unknown column
      case OUT_OF_RANGE:
        return context == CTX_SNAPSHOT_TIMESTAMP ? ErrorClass.DK_TIMESTAMP_OUT_OF_RANGE
            : ErrorClass.DK_VERSION_NOT_FOUND;
      case UNSUPPORTED:
        return ErrorClass.DK_UNSUPPORTED_FEATURE;
      case CORRUPT:
        return ErrorClass.DK_CORRUPT_TABLE;
      case INVALID:
        return ErrorClass.DK_INVALID_ARGUMENT;
      case IO:
        return ErrorClass.DK_IO_ERROR;
      default:
        return ErrorClass.DK_INTERNAL;
    }
  }
}
