package io.dk.spark;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * JNI entry points into libdk (native/dk_jni.c). The library is extracted from the jar to a
 * temporary directory once per JVM (driver and executors alike) and loaded from there; setting
 * the system property {@code dk.jni.path} loads a given file instead.
 */
final class DkNative {
  private DkNative() {}

  private static volatile boolean loaded;

  static void ensureLoaded() {
    if (loaded) return;
    synchronized (DkNative.class) {
      if (loaded) return;
      String explicit = System.getProperty("dk.jni.path");
      if (explicit != null) {
        System.load(explicit);
      } else {
        String res = "/native/linux-x86_64/libdk_jni.so";
        try (InputStream in = DkNative.class.getResourceAsStream(res)) {
          if (in == null) throw new UnsatisfiedLinkError("dk: " + res + " is not in the jar");
          Path dir = Files.createTempDirectory("dk-jni");
          Path lib = dir.resolve("libdk_jni.so");
          Files.copy(in, lib, StandardCopyOption.REPLACE_EXISTING);
          lib.toFile().deleteOnExit();
          dir.toFile().deleteOnExit();
          System.load(lib.toAbsolutePath().toString());
        } catch (IOException e) {
          throw new UnsatisfiedLinkError("dk: cannot extract " + res + ": " + e);
        }
      }
      loaded = true;
    }
  }

  /** mode: 0 latest, 1 version, 2 timestamp (ms). */
  /** storageOptions: an s3:// or s3a:// table's (key, value, ...), or null; confinePaths:
   *  refuse files the log names outside the table root (dk_table_options.confine_paths). */
  static native long snapshotOpen(String uri, int mode, long version, long timestampMs,
      String[] storageOptions, boolean confinePaths);
  static native void snapshotFree(long snap);
  /** Whether the log at uri lists a commit or checkpoint, through libdk's storage. */
  static native boolean tableExists(String uri, String[] storageOptions);
  /** One DELETE commit (dk_table_delete) on the latest version of the table at uri;
   *  {committed version or -1, deleted rows, removed files, added files, DVs added}. */
  static native long[] tableDelete(String uri, String[] storageOptions, boolean confinePaths,
      String predicate, String engineInfo);
  /** dk_table_alter on snapshot snap (see dk_jni.c); the committed version. */
  static native long tableAlter(long snap, int kind, String[] props, int[] pathLens,
      String[] pathParts, String[] colInfo, boolean ifExists, String engine);
  /** {version, commit ms, commitInfo JSON} triples, newest first (limit <= 0: all). */
  static native String[] tableHistory(String uri, String[] storageOptions, long limit);
  static native long snapshotRef(long snap);
  static native long snapshotUpdate(long snap);
  static native long snapshotVersion(long snap);
  static native long snapshotTimestamp(long snap);
  static native boolean snapshotHasFeature(long snap, String feature);
  static native String[] snapshotPartitionColumns(long snap);
  static native String[] snapshotProperties(long snap);
  static native String snapshotSchemaString(long snap);
  static native void snapshotArrowSchema(long snap, long arrowSchemaAddress);

  static native long scanNew(long snap, String[] columns, String filter, long limit,
      int metadataFields, long splitTargetBytes, long openCostBytes);
  static native void scanFree(long scan);
  static native void scanSchema(long scan, long arrowSchemaAddress);
  static native String scanResidual(long scan);
  static native long[] scanStats(long scan);
  static native byte[][] scanSplits(long scan);

  static native void splitRead(byte[] split, long arrowArrayStreamAddress);
  /** splitRead of a split of the object-store table at root, with its storage options. */
  static native void splitReadWith(byte[] split, long arrowArrayStreamAddress, String root,
      String[] storageOptions);
  /** Bytes currently held by executor-side reads (counting allocator in dk_jni.c). */
  static native long nativeBytesOutstanding();
  /** Allocations made by split reads in this JVM so far (monotonic). */
  static native long nativeAllocations();
  static native String exprBindCheck(long snap, String filterText);

  // ---- transactions (driver) ----
  static native long txnBegin(long snap, String operation, String paramsJson, String engineInfo,
      String userMetadata);
  /** storageOptions: an object-store table's (key, value, ...), or null (local). */
  static native long txnBeginCreate(String uri, String[] storageOptions, String operation,
      String paramsJson, String engineInfo, String userMetadata);
  static native void txnAbort(long txn);
  static native long txnReadVersion(long txn);
  /** confKv: alternating keys and values. */
  static native void txnSetMetadata(long txn, String schemaString, String[] partitionColumns,
      String[] confKv, String name, String description);
  static native long[] txnReadFiles(long txn, String filterText, boolean partitionOnly);
  /** values: nRows rows of the partition columns' serialized values (null = null). */
  static native long[] txnReadPartitions(long txn, String[] values, int nRows);
  static native void txnReadWholeTable(long txn);
  /** Removes active file i of the read snapshot; returns its size. */
  static native long txnRemoveFile(long txn, long i, boolean dataChange);
  static native long txnAppVersion(long txn, String appId);
  static native void txnSetAppVersion(long txn, String appId, long version);
  static native void txnSetMetric(long txn, String name, long value);
  /** dk_txn_delete_rows: rows by (data file URI in libdk's form, row index); {deleted rows,
   *  files touched, files removed, removed bytes, DVs added, DVs removed, DVs updated}. */
  static native long[] txnDeleteRows(long txn, String[] uris, long[] rows);
  static native void txnClearMetrics(long txn);
  static native byte[] txnWriterState(long txn);
  static native long txnAddStaged(long txn, byte[] adds);
  /** Consumes the handle. {version, attempts, commit timestamp, checkpoint}. */
  static native long[] txnCommit(long txn);

  // ---- writer transactions (executors) ----
  /** Whether this libdk has the data path (dk_txn_write). */
  static native boolean canWrite();
  /** storageOptions: an object-store table's (key, value, ...), or null (local). */
  static native long writerOpen(String uri, String[] storageOptions, byte[] state, String replaceWhere,
      long targetFileSize, int threads);
  static native void writerFree(long writer);
  /** Pulls batches from source.exportSchema(long)/nextBatch(long); returns the partitions
   *  written (rows of nPart serialized values). */
  static native String[] writerWriteAll(long writer, Object source, int nPart);
  /** {files, rows, bytes} so far. */
  static native long[] writerStats(long writer);
  static native byte[] writerStagedAdds(long writer);
}
