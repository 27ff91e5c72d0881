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
    DK_UNSUPPORTED_FEATURE, DK_CORRUPT_TABLE, DK_INVALID_ARGUMENT, DK_IO_ERROR, DK_INTERNAL
  }

  // Native status codes (include/dk/common.h) and call contexts (dk_jni.c).
  static final int NOT_FOUND = 4, CORRUPT = 5, UNSUPPORTED = 6, INVALID = 2, IO = 3,
      OUT_OF_RANGE = 11;
  static final int CTX_TABLE_OPEN = 1, CTX_SNAPSHOT_LATEST = 2, CTX_SNAPSHOT_VERSION = 3,
      CTX_SNAPSHOT_TIMESTAMP = 4;

  private final ErrorClass errorClass;
  private final int status;

  /** Called from native code. */
  DkException(int status, int context, String message) {
    this(classify(status, context), status, message);
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

  static ErrorClass classify(int status, int context) {
    switch (status) {
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
