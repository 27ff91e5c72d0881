package io.dk.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A table's change data feed ({@code option("readChangeFeed", "true")}): the table's columns
 * then {@code _change_type}, {@code _commit_version}, {@code _commit_timestamp}, as
 * delta-spark's CDCReader gives them. Batch reads take startingVersion / startingTimestamp and
 * optionally endingVersion / endingTimestamp (libdk's dk_changes: Spark's range rules and
 * errors); streaming reads give the change rows of each micro-batch (DkMicroBatchStream).
 * Change files are packed into input partitions; each executor task plans the range again and
 * reads its slice.
 */
public class DkChangesTable implements SupportsRead {
  static final String[] CDC_COLUMNS = {"_change_type", "_commit_version", "_commit_timestamp"};

  private final DkTable base;
  private final StructType schema;

  DkChangesTable(DkTable base) {
    this.base = base;
    List<StructField> f = new ArrayList<>(Arrays.asList(base.schema().fields()));
    f.add(DataTypes.createStructField(CDC_COLUMNS[0], DataTypes.StringType, true));
    f.add(DataTypes.createStructField(CDC_COLUMNS[1], DataTypes.LongType, true));
    f.add(DataTypes.createStructField(CDC_COLUMNS[2], DataTypes.TimestampType, true));
    this.schema = new StructType(f.toArray(new StructField[0]));
  }

  @Override public String name() { return base.name() + " (changes)"; }
  @Override public StructType schema() { return schema; }
  @Override public Transform[] partitioning() { return base.partitioning(); }
  @Override public Map<String, String> properties() { return base.properties(); }

  @Override public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ);
  }

  @Override public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new Builder(options);
  }

  private final class Builder implements ScanBuilder, SupportsPushDownRequiredColumns {
    private final DkStreamOptions options;
    private StructType required = schema;

    Builder(CaseInsensitiveStringMap o) {
      this.options = new DkStreamOptions(o);
    }

    @Override public void pruneColumns(StructType requiredSchema) {
      // top-level columns only: libdk reads whole structs here
      List<StructField> f = new ArrayList<>();
      for (StructField s : schema.fields())
        for (String n : requiredSchema.fieldNames()) if (n.equalsIgnoreCase(s.name())) f.add(s);
      required = new StructType(f.toArray(new StructField[0]));
    }

    @Override public Scan build() { return new ChangesScan(options, required); }
  }

  private final class ChangesScan implements Scan, Batch {
    private final DkStreamOptions options;
    private final StructType read;
    private NativeChanges planned;

    ChangesScan(DkStreamOptions options, StructType read) {
      this.options = options;
      this.read = read;
    }

    @Override public StructType readSchema() { return read; }

    @Override public String description() {
      return "DkChangesScan " + base.snapshot().path() + " " + Arrays.toString(read.fieldNames());
    }

    @Override public Batch toBatch() { return this; }

    @Override public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
      return new DkMicroBatchStream(options, schema, checkpointLocation);
    }

    private synchronized NativeChanges planned() {
      if (planned == null)
        planned = new NativeChanges(options.path, options.storageOptions, options.changesBounds(), read.fieldNames(), null);
      return planned;
    }

    @Override public InputPartition[] planInputPartitions() {
      NativeChanges c = planned();
      long[] info = c.info();
      if (info[1] < info[0]) return new InputPartition[0];  // empty timestamp range
      // executors plan the versions resolved here (the table may move on meanwhile)
      return DkChangeSlice.ofChanges(options, new long[] {1, info[0], 1, info[1]},
          c.fileSizes(), read.fieldNames(), null);
    }

    @Override public PartitionReaderFactory createReaderFactory() {
      String[] out = planned().arrowSchema().getFields().stream().map(f -> f.getName())
          .toArray(String[]::new);
      return new DkChangeSlice.Factory(DkChangeSlice.keep(read, out), read);
    }
  }
}
