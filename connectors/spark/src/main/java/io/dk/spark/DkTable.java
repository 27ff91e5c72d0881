package io.dk.spark;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A Delta table at one snapshot, read through libdk. Capabilities: BATCH_READ and
 * MICRO_BATCH_READ (DkMicroBatchStream, from DkScan.toMicroBatchStream).
 */
public class DkTable implements SupportsRead, SupportsMetadataColumns {
  static final String METADATA = "_metadata";

  private final NativeSnapshot snapshot;
  private final StructType schema;
  private final StructType deltaSchema;  // schemaString as Spark parses it (variant, collations)
  private final String[] partitionColumns;

  public DkTable(NativeSnapshot snapshot) {
    this.snapshot = snapshot;
    this.partitionColumns = snapshot.partitionColumns();
    this.deltaSchema = SparkTypes.deltaSchema(snapshot.schemaString());
    StructType s = SparkTypes.overlay(ArrowUtils.fromArrowSchema(snapshot.arrowSchema()), deltaSchema);
    // Spark's order: data columns, then partition columns (in partitionColumns order).
    Set<String> parts = new HashSet<>();
    for (String p : partitionColumns) parts.add(p.toLowerCase(java.util.Locale.ROOT));
    List<StructField> fields = new ArrayList<>();
    for (StructField f : s.fields())
      if (!parts.contains(f.name().toLowerCase(java.util.Locale.ROOT))) fields.add(f);
    for (String p : partitionColumns)
      for (StructField f : s.fields()) if (f.name().equalsIgnoreCase(p)) fields.add(f);
    this.schema = new StructType(fields.toArray(new StructField[0]));
  }

  NativeSnapshot snapshot() { return snapshot; }
  StructType deltaSchema() { return deltaSchema; }
  String[] partitionColumnNames() { return partitionColumns; }

  @Override public String name() { return "dk.`" + snapshot.path() + "`@v" + snapshot.version(); }

  @Override public StructType schema() { return schema; }

  @Override public Transform[] partitioning() {
    Transform[] t = new Transform[partitionColumns.length];
    for (int i = 0; i < t.length; i++) t[i] = Expressions.identity(partitionColumns[i]);
    return t;
  }

  @Override public Map<String, String> properties() { return snapshot.properties(); }

  @Override public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ);
  }

  @Override public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new DkScanBuilder(this, options);
  }

  boolean rowTracking() { return snapshot.hasFeature("rowTracking"); }

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
