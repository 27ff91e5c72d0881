package io.dk.spark;

/**
 * JNI entry points of the change data feed and streaming reads (the "change data feed and
 * streaming reads" section of native/dk_jni.c, over include/dk/changes.h). Handles are
 * pointers owned by {@link NativeChanges} and {@link NativeStream}.
 */
final class DkStreamNative {
  private DkStreamNative() {}

  /** bounds: {startKind, start, endKind, end} (dk_bound_kind: 0 default, 1 version,
   *  2 timestamp ms).
   *  storageOptions: key, value, ... for an s3:// / s3a:// table (DkStorageOptions), or null.
   */
  static native long changesOpen(String path, String[] storageOptions, long[] bounds,
      String[] columns, String filter);
  static native void changesFree(long changes);
  /** {start version, end version, schema version, files}. */
  static native long[] changesInfo(long changes);
  static native long[] changesFileSizes(long changes);
  static native void changesSchema(long changes, long arrowSchemaAddress);
  static native void changesReadFiles(long changes, long first, long n, long streamAddress);

  /** opts: see {@link DkStreamOptions#nativeOptions}. */
  static native long streamOpen(String path, String[] storageOptions, long[] opts,
      String excludeRegex, String[] columns);
  static native void streamFree(long stream);
  static native void streamSchema(long stream, long arrowSchemaAddress);
  static native String streamInitialOffset(long stream);
  /** null when no data is there after start. maxFiles / maxBytes as dk_stream_latest_offset. */
  static native String streamLatestOffset(long stream, String start, long maxFiles,
      long maxBytes);
  static native long streamBatch(long stream, String start, String end);
  static native void batchFree(long batch);
  static native long[] batchFileSizes(long batch);
  static native void batchReadFiles(long batch, long first, long n, long streamAddress);
}
