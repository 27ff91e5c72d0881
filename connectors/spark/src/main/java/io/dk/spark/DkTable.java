package io.dk.spark;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsDeleteV2;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A Delta table at one snapshot, read and written through libdk; or a path where a write is
 * about to create one ({@link #absent}). Capabilities: BATCH_READ and
 * MICRO_BATCH_READ (DkMicroBatchStream, from DkScan.toMicroBatchStream), and for the latest
 * snapshot the writes (BATCH_WRITE, STREAMING_WRITE, TRUNCATE, OVERWRITE_BY_FILTER,
 * OVERWRITE_DYNAMIC); a table pinned by time travel is read-only, as Delta's V2 connector's.
 * Row-level DELETE / UPDATE / MERGE: a DELETE whose condition libdk evaluates runs whole in
 * libdk (SupportsDeleteV2, dk_table_delete); the rest take Spark's delta-based row-level plan
 * (SupportsRowLevelOperations, {@link DkRowLevelOperation}).
 * ACCEPT_ANY_SCHEMA only when the write options ask for mergeSchema / overwriteSchema or the
 * write creates the table: then the connector resolves the data's columns by name itself
 * ({@link WritePlan}); otherwise Spark resolves them (by name or position, with its casts).
 */
public class DkTable implements SupportsRead, SupportsWrite, SupportsMetadataColumns,
    SupportsDeleteV2, SupportsRowLevelOperations {
  static final String METADATA = "_metadata";

  private final NativeSnapshot snapshot;   // null when absent
  private final String path;
  private final boolean pinned;
  private final CaseInsensitiveStringMap options;
  private final StructType schema;
  private final StructType deltaSchema;  // schemaString as Spark parses it (variant, collations)
  private final String[] partitionColumns;
  private final String[] storageOptions; // an object-store table's; null when local

  public DkTable(NativeSnapshot snapshot) { this(snapshot, false, CaseInsensitiveStringMap.empty()); }

  DkTable(NativeSnapshot snapshot, boolean pinned, CaseInsensitiveStringMap options) {
    this.snapshot = snapshot;
    this.path = snapshot.path();
    this.pinned = pinned;
    this.options = options;
    this.partitionColumns = snapshot.partitionColumns();
    this.storageOptions = snapshot.storageOptions();
    this.deltaSchema = SparkTypes.deltaSchema(snapshot.schemaString());
    // DDL order (the schemaString's), as Delta's tables present it: positional INSERTs match
    this.schema = SparkTypes.overlay(ArrowUtils.fromArrowSchema(snapshot.arrowSchema()), deltaSchema);
  }

  DkTable(String path, StructType schema, String[] partitionColumns,
      CaseInsensitiveStringMap options) {
    this.snapshot = null;
    this.path = path;
    this.pinned = false;
    this.options = options;
    this.schema = schema;
    this.deltaSchema = schema;
    this.partitionColumns = partitionColumns;
    // resolved now, on the driver, from the options and the session (DkStorageOptions)
    this.storageOptions = DkStorageOptions.resolve(path, options);
  }

  /** No table at `path` yet: a write creates it with the data's schema and `partitioning`. */
  static DkTable absent(String path, StructType schema, Transform[] partitioning,
      CaseInsensitiveStringMap options) {
    return new DkTable(path, schema == null ? new StructType() : schema,
        identityColumns(partitioning), options);
  }

  /** The column names of identity partition transforms (partitionBy / PARTITIONED BY). */
  static String[] identityColumns(Transform[] partitioning) {
    if (partitioning == null) return new String[0];
    String[] out = new String[partitioning.length];
    for (int i = 0; i < out.length; i++) {
      Transform t = partitioning[i];
      if (!"identity".equals(t.name()) || t.references().length != 1
          || t.references()[0].fieldNames().length != 1)
        throw new DkException(DkException.ErrorClass.DK_UNSUPPORTED_FEATURE,
            DkException.UNSUPPORTED, "dk tables are partitioned by columns; "
                + t.describe() + " is not a column");
      out[i] = t.references()[0].fieldNames()[0];
    }
    return out;
  }

  /** The table's snapshot; DK_TABLE_NOT_FOUND when no table exists yet. */
  NativeSnapshot snapshot() {
    if (snapshot == null)
      throw new DkException(DkException.ErrorClass.DK_TABLE_NOT_FOUND, DkException.NOT_FOUND,
          "no Delta table at " + path);
    return snapshot;
  }
  boolean exists() { return snapshot != null; }
  boolean pinned() { return pinned; }
  String path() { return path; }
  CaseInsensitiveStringMap options() { return options; }
  /** The storage options of an object-store table (key, value, ...; its snapshot's, or for a
   *  table about to be created those the write's options and the session give), null for a
   *  local one: the create, the executors' writers and later snapshots use these. */
  String[] storageOptions() { return storageOptions; }
  StructType deltaSchema() { return deltaSchema; }
  String[] partitionColumnNames() { return partitionColumns; }

  @Override public String name() {
    return snapshot == null ? "dk.`" + path + "`"
        : "dk.`" + path + "`" + (pinned ? "@v" + snapshot.version() : "");
  }

  @Override public StructType schema() { return schema; }

  @Override public Transform[] partitioning() {
    Transform[] t = new Transform[partitionColumns.length];
    for (int i = 0; i < t.length; i++) t[i] = Expressions.identity(partitionColumns[i]);
    return t;
  }

  @Override public Map<String, String> properties() {
    return snapshot == null ? new java.util.HashMap<>() : snapshot.properties();
  }

  @Override public Set<TableCapability> capabilities() {
    if (pinned) return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ);
    EnumSet<TableCapability> c = EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ,
        TableCapability.BATCH_WRITE,
        TableCapability.STREAMING_WRITE, TableCapability.TRUNCATE,
        TableCapability.OVERWRITE_BY_FILTER, TableCapability.OVERWRITE_DYNAMIC);
    if (snapshot == null || WriteOptions.evolvesSchema(options))
      c.add(TableCapability.ACCEPT_ANY_SCHEMA);
    return c;
  }

  @Override public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new DkScanBuilder(this, options);
  }

  @Override public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    if (pinned)
      throw new DkException(DkException.ErrorClass.DK_TABLE_READ_ONLY, DkException.INVALID,
          name() + " is pinned by time travel (version " + snapshot.version()
              + ") and cannot be written");
    return new DkWriteBuilder(this, info);
  }

  // ---- DELETE (SupportsDeleteV2) ----

  /** The predicates as one dk predicate text ("" for none / ALWAYS_TRUE: every row), or null
   *  when one of them is not exactly expressible in libdk. */
  private String deleteText(Predicate[] predicates) {
    List<String> parts = new ArrayList<>();
    for (Predicate p : predicates) {
      if ("ALWAYS_TRUE".equals(p.name())) continue;
      String t = DkScanBuilder.dkText(this, p, new HashSet<>());
      if (t == null) return null;
      parts.add(t);
    }
    return String.join(" AND ", parts);
  }

  private void checkWritable() {
    if (pinned)
      throw new DkException(DkException.ErrorClass.DK_TABLE_READ_ONLY, DkException.INVALID,
          name() + " is pinned by time travel (version " + snapshot.version()
              + ") and cannot be written");
    snapshot();
  }

  /** DELETE whose condition libdk evaluates exactly as Spark: the whole statement runs in
   *  libdk (dk_table_delete: deletion vectors when the table allows them, else files
   *  rewritten; whole files dropped for partition predicates), one commit as delta-spark's
   *  DeleteCommand writes it, with its operationMetrics. */
  @Override public boolean canDeleteWhere(Predicate[] predicates) {
    checkWritable();
    return deleteText(predicates) != null;
  }

  @Override public void deleteWhere(Predicate[] predicates) {
    checkWritable();
    String text = deleteText(predicates);
    if (text == null)
      throw new DkException(DkException.ErrorClass.DK_UNSUPPORTED_FEATURE, DkException.UNSUPPORTED,
          "dk cannot evaluate this DELETE condition exactly: " + java.util.Arrays.toString(predicates));
    DkNative.tableDelete(path, snapshot.storageOptions(), snapshot.confinePaths(),
        text.isEmpty() ? null : text, NativeTxn.ENGINE);
  }

  /** DELETE (when deleteWhere cannot take its condition), UPDATE and MERGE through Spark's
   *  delta-based row-level plan: DkRowLevelOperation. */
  @Override public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
    checkWritable();
    DkRowLevelOperation op = new DkRowLevelOperation(this, info.command(), info.options());
    return () -> op;
  }

  boolean rowTracking() { return snapshot != null && snapshot.hasFeature("rowTracking"); }

  /** The `_metadata` struct: the six file fields, row_index, and with row tracking row_id and
   *  row_commit_version. Field order is libdk's (DK_META_* bit order). */
  StructType metadataType() {
    List<StructField> f = new ArrayList<>();
    f.add(DataTypes.createStructField("file_path", DataTypes.StringType, false));
    f.add(DataTypes.createStructField("file_name", DataTypes.StringType, false));
    f.add(DataTypes.createStructField("file_size", DataTypes.LongType, false));
    f.add(DataTypes.createStructField("file_block_start", DataTypes.LongType, false));
    f.add(DataTypes.createStructField("file_block_length", DataTypes.LongType, false));
    f.add(DataTypes.createStructField("file_modification_time", DataTypes.TimestampType, false));
    f.add(DataTypes.createStructField("row_index", DataTypes.LongType, false));
    if (rowTracking()) {
      f.add(DataTypes.createStructField("row_id", DataTypes.LongType, true));
      f.add(DataTypes.createStructField("row_commit_version", DataTypes.LongType, true));
    }
    return new StructType(f.toArray(new StructField[0]));
  }

  /** DK_META_* bit of a `_metadata` field name (include/dk/scan.h), or 0. */
  static int metadataBit(String field) {
    switch (field) {
      case "file_path": return 1;
      case "file_name": return 1 << 1;
      case "file_size": return 1 << 2;
      case "file_block_start": return 1 << 3;
      case "file_block_length": return 1 << 4;
      case "file_modification_time": return 1 << 5;
      case "row_index": return 1 << 6;
      case "row_id": return 1 << 7;
      case "row_commit_version": return 1 << 8;
      default: return 0;
    }
  }

  @Override public MetadataColumn[] metadataColumns() {
    final StructType t = metadataType();
    return new MetadataColumn[] {new MetadataColumn() {
      @Override public String name() { return METADATA; }
      @Override public DataType dataType() { return t; }
      @Override public boolean isNullable() { return false; }
    }};
  }
}
