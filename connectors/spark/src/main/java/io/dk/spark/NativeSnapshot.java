package io.dk.spark;

import java.lang.ref.Cleaner;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.types.pojo.Schema;

/** Owns a libdk table + snapshot pair (driver side). Freed on close() or, failing that, by GC. */
public final class NativeSnapshot implements AutoCloseable {
  static final Cleaner CLEANER = Cleaner.create();

  private static final class Free implements Runnable {
    private final long handle;
    Free(long handle) { this.handle = handle; }
    @Override public void run() { DkNative.snapshotFree(handle); }
  }

  private final long handle;
  private final Cleaner.Cleanable cleanable;
  private final String path;
  private final String[] storageOptions; // null for a local table
  private final boolean confinePaths;

  private NativeSnapshot(long handle, String path, String[] storageOptions, boolean confinePaths) {
    this.handle = handle;
    this.path = path;
    this.storageOptions = storageOptions;
    this.confinePaths = confinePaths;
    this.cleanable = CLEANER.register(this, new Free(handle));
  }

  /** Latest version (version < 0 and timestampMs == null), a version, or a timestamp (ms). */
  public static NativeSnapshot open(String path, long version, Long timestampMs) {
    return open(path, version, timestampMs, null);
  }

  /** The same, with the read's options (may be null): their {@code fs.s3a.*} settings come
   *  first for an object-store table ({@link DkStorageOptions}); {@code confinePaths}
   *  ({@link #confineOption}) refuses files the log names outside the table root. */
  public static NativeSnapshot open(String path, long version, Long timestampMs,
      Map<String, String> readOptions) {
    return openWith(path, version, timestampMs, DkStorageOptions.resolve(path, readOptions),
        confineOption(readOptions));
  }

  /** so: the storage options DkStorageOptions.resolve gave for path (null when local);
   *  confinePaths: dk_table_options.confine_paths. */
  static NativeSnapshot openWith(String path, long version, Long timestampMs, String[] so,
      boolean confinePaths) {
    DkNative.ensureLoaded();
    int mode = timestampMs != null ? 2 : (version >= 0 ? 1 : 0);
    long ts = timestampMs == null ? 0 : timestampMs;
    try {
      long h = DkNative.snapshotOpen(path, mode, version, ts, so, confinePaths);
      return new NativeSnapshot(h, path, so, confinePaths);
    } catch (DkException e) {
      if (e.getErrorClass() == DkException.ErrorClass.DK_VERSION_NOT_FOUND
          && !DkNative.tableExists(path, so)) {
        throw new DkException(DkException.ErrorClass.DK_TABLE_NOT_FOUND, e.getStatus(),
            e.getMessage().replaceFirst("^\\[[A-Z_]+\\] ", ""));
      }
      throw e;
    }
  }

  /** A snapshot of the latest version through the per-path cache ({@link SnapshotCache}). */
  public static NativeSnapshot latest(String path) {
    return latest(path, null);
  }

  /** The same, with the read's options (may be null; see {@link #open(String, long, Long,
   *  Map)}): the cache keeps one snapshot per path and storage options. */
  public static NativeSnapshot latest(String path, Map<String, String> readOptions) {
    DkNative.ensureLoaded();
    return SnapshotCache.latest(path, DkStorageOptions.resolve(path, readOptions),
        confineOption(readOptions));
  }

  /** The confinePaths option: a read or write option, else the session's
   *  {@code spark.dk.confinePaths}; false by default, as delta-spark reads whatever the log
   *  names (absolute paths and URIs of other locations included: shallow clones). */
  static boolean confineOption(Map<String, String> options) {
    String v = options == null ? null : options.get("confinePaths");
    if (v == null) {
      org.apache.spark.sql.SparkSession s = org.apache.spark.sql.SparkSession.getActiveSession()
          .getOrElse(() -> null);
      v = s == null ? null : s.conf().get("spark.dk.confinePaths", null);
    }
    return v != null && Boolean.parseBoolean(v.trim());
  }

  /** Whether a Delta table exists at path (its log has a commit or checkpoint), asked of
   *  libdk through the path's storage (local, s3://, s3a://; options: the read's). */
  public static boolean exists(String path, Map<String, String> readOptions) {
    DkNative.ensureLoaded();
    return DkNative.tableExists(path, DkStorageOptions.resolve(path, readOptions));
  }

  public static boolean exists(String path) { return exists(path, null); }

  /** A second, independently closed handle on the same snapshot. */
  NativeSnapshot ref() {
    return new NativeSnapshot(DkNative.snapshotRef(handle), path, storageOptions, confinePaths);
  }

  /** This object when the table has no newer commit, else a new snapshot of the latest
   *  version built from this one by reading only the newer commits. */
  NativeSnapshot update() {
    long h = DkNative.snapshotUpdate(handle);
    return h == 0 ? this : new NativeSnapshot(h, path, storageOptions, confinePaths);
  }

  long handle() { return handle; }
  public String path() { return path; }
  /** The storage options of an object-store table (key, value, ...), null for a local one. */
  String[] storageOptions() { return storageOptions; }
  boolean confinePaths() { return confinePaths; }
  public long version() { return DkNative.snapshotVersion(handle); }
  public long timestampMs() { return DkNative.snapshotTimestamp(handle); }
  public boolean hasFeature(String f) { return DkNative.snapshotHasFeature(handle, f); }
  /** null when dk can evaluate the predicate text against this snapshot, else why not. */
  public String bindCheck(String filterText) { return DkNative.exprBindCheck(handle, filterText); }
  public String[] partitionColumns() { return DkNative.snapshotPartitionColumns(handle); }

  public Map<String, String> properties() {
    String[] kv = DkNative.snapshotProperties(handle);
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i + 1 < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
    return m;
  }

  /** The table's Delta schemaString (Spark's JSON schema format), or null. */
  public String schemaString() { return DkNative.snapshotSchemaString(handle); }

  /** The logical schema as an Arrow schema. */
  public Schema arrowSchema() {
    try (BufferAllocator a = new RootAllocator();
        ArrowSchema s = ArrowSchema.allocateNew(a)) {
      DkNative.snapshotArrowSchema(handle, s.memoryAddress());
      return Data.importSchema(a, s, null);
    }
  }

  @Override public void close() { cleanable.clean(); }
}
