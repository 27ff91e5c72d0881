package io.dk.spark;

import java.util.List;
import java.util.Map;

/**
 * A libdk transaction owned by the driver (include/dk/txn.h): begun on a snapshot (its read
 * version) or on an empty location (creating the table), it records reads and removes,
 * stages metadata, app versions and metrics, hands its writer state to executors and takes
 * their adds back, and commits once with libdk's conflict checks and retries. close() aborts
 * a transaction that did not commit (nothing is written; data files stay for VACUUM).
 */
final class NativeTxn implements AutoCloseable {
  private long handle;

  private NativeTxn(long handle) { this.handle = handle; }

  static final String ENGINE = engineInfo();

  private static String engineInfo() {
    String spark = org.apache.spark.package$.MODULE$.SPARK_VERSION();
    return "Apache-Spark/" + spark + " dk-spark/" + DkNative.class.getPackage().getImplementationVersion();
  }

  static NativeTxn begin(NativeSnapshot snap, String operation, String params, String userMetadata) {
    return new NativeTxn(DkNative.txnBegin(snap.handle(), operation, params, ENGINE, userMetadata));
  }

  /** A local path's directory is made first (libdk opens only existing local roots; object
   *  stores have no directories). storageOptions: an object-store table's (DkTable's), or
   *  null. */
  static NativeTxn beginCreate(String path, String[] storageOptions, String operation,
      String params, String userMetadata) {
    DkNative.ensureLoaded();
    if (!path.contains("://")) {
      java.io.File dir = new java.io.File(path.startsWith("file:") ? path.substring(5) : path);
      if (!dir.isDirectory() && !dir.mkdirs() && !dir.isDirectory())
        throw new DkException(DkException.ErrorClass.DK_IO_ERROR, DkException.IO,
            "cannot create the table directory " + dir);
    }
    return new NativeTxn(DkNative.txnBeginCreate(path, storageOptions, operation, params, ENGINE, userMetadata));
  }

  private long h() {
    if (handle == 0) throw new IllegalStateException("dk transaction already finished");
    return handle;
  }

  long readVersion() { return DkNative.txnReadVersion(h()); }

  void setMetadata(String schemaString, List<String> partitionColumns, Map<String, String> conf,
      String name, String description) {
    String[] kv = new String[conf.size() * 2];
    int i = 0;
    for (Map.Entry<String, String> e : conf.entrySet()) {
      kv[i++] = e.getKey();
      kv[i++] = e.getValue();
    }
    DkNative.txnSetMetadata(h(), schemaString, partitionColumns.toArray(new String[0]), kv, name,
        description);
  }

  long[] readFiles(String filterText, boolean partitionOnly) {
    return DkNative.txnReadFiles(h(), filterText, partitionOnly);
  }
  long[] readPartitions(String[] values, int rows) { return DkNative.txnReadPartitions(h(), values, rows); }
  void readWholeTable() { DkNative.txnReadWholeTable(h()); }
  long removeFile(long i) { return DkNative.txnRemoveFile(h(), i, true); }
  long appVersion(String appId) { return DkNative.txnAppVersion(h(), appId); }
  void setAppVersion(String appId, long v) { DkNative.txnSetAppVersion(h(), appId, v); }
  void setMetric(String name, long v) { DkNative.txnSetMetric(h(), name, v); }
  long[] deleteRows(String[] uris, long[] rows) { return DkNative.txnDeleteRows(h(), uris, rows); }
  void clearMetrics() { DkNative.txnClearMetrics(h()); }
  byte[] writerState() { return DkNative.txnWriterState(h()); }
  long addStaged(byte[] adds) { return DkNative.txnAddStaged(h(), adds); }

  /** Commits; {version, attempts, commit timestamp, checkpoint}. The handle is consumed. */
  long[] commit() {
    long x = h();
    handle = 0;
    return DkNative.txnCommit(x);
  }

  @Override public void close() {
    if (handle != 0) {
      DkNative.txnAbort(handle);
      handle = 0;
    }
  }
}
