package io.dk.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A planned libdk scan. The file selection (partition pruning, stats skipping, limit) happens
 * in libdk on the driver; input partitions are libdk's serialized splits (row-group aligned,
 * target spark.sql.files.maxPartitionBytes, open cost spark.sql.files.openCostInBytes).
 * Runtime (dynamic partition pruning) filters on partition columns re-plan the scan (files of a
 * null partition value are kept: runtime filters only prune).
 */
public class DkScan implements Batch, SupportsReportStatistics, SupportsRuntimeV2Filtering {
  private final DkTable table;
  private final String[] columns;
  private final List<String> pushedText;
  private final long limit;
  private final int meta;
  private final long splitTarget, openCost;
  private String filter;
  private final List<String> runtimeText = new ArrayList<>();
  private NativeScan nscan;
  private StructType readSchema;
  private byte[][] splits;
  private final CaseInsensitiveStringMap options;

  DkScan(DkTable table, String[] columns, String filter, List<String> pushedText, long limit,
      int meta, CaseInsensitiveStringMap options) {
    this.table = table;
    this.columns = columns;
    this.filter = filter;
    this.pushedText = new ArrayList<>(pushedText);
    this.limit = limit;
    this.meta = meta;
    this.options = options;
    SQLConf conf = SQLConf.get();
    long target = conf.filesMaxPartitionBytes(), cost = conf.filesOpenCostInBytes();
    if (options.containsKey("maxPartitionBytes"))
      target = Long.parseLong(options.get("maxPartitionBytes"));
    this.splitTarget = target;
    this.openCost = cost;
  }

  private synchronized NativeScan native_() {
    if (nscan == null) {
      try {
        nscan = new NativeScan(table.snapshot(), columns, filter, limit, meta, splitTarget,
            openCost);
      } catch (DkException e) {
        // Nested projection not available in this libdk: read whole top-level structs and
        // let Spark prune.
        if (e.getErrorClass() != DkException.ErrorClass.DK_UNSUPPORTED_FEATURE
            || columns == null || Arrays.stream(columns).noneMatch(c -> c.contains(".")))
          throw e;
        nscan = new NativeScan(table.snapshot(), topLevel(columns), filter, limit, meta,
            splitTarget, openCost);
      }
    }
    return nscan;
  }

  private static String[] topLevel(String[] cols) {
    java.util.LinkedHashSet<String> out = new java.util.LinkedHashSet<>();
    for (String c : cols) out.add(c.contains(".") ? c.substring(0, c.indexOf('.')) : c);
    return out.toArray(new String[0]);
  }

  /** Output columns of libdk's batches that Spark asked for (libdk may add columns it
   *  needs, e.g. partition columns); null = all. Dropping a column is free (no copy). */
  private int[] keep;

  @Override public synchronized StructType readSchema() {
    if (readSchema == null) {
      StructType full = SparkTypes.overlay(ArrowUtils.fromArrowSchema(native_().arrowSchema()),
          table.deltaSchema());
      if (columns == null) {
        readSchema = full;
      } else {
        Set<String> want = new HashSet<>();
        for (String c : topLevel(columns)) want.add(c.toLowerCase(Locale.ROOT));
        List<Integer> k = new ArrayList<>();
        List<org.apache.spark.sql.types.StructField> f = new ArrayList<>();
        for (int i = 0; i < full.fields().length; i++) {
          String n = full.fields()[i].name();
          if (want.contains(n.toLowerCase(Locale.ROOT)) || (meta != 0 && n.equals(DkTable.METADATA))) {
            k.add(i);
            f.add(full.fields()[i]);
          }
        }
        if (k.size() != full.fields().length) {
          keep = k.stream().mapToInt(Integer::intValue).toArray();
          readSchema = new StructType(f.toArray(new org.apache.spark.sql.types.StructField[0]));
        } else {
          readSchema = full;
        }
      }
    }
    return readSchema;
  }

  @Override public String description() {
    long[] st = native_().stats();
    StringBuilder sb = new StringBuilder("DkScan ").append(table.snapshot().path())
        .append(" version=").append(table.snapshot().version());
    sb.append(" PushedFilters: [").append(String.join(", ", pushedText)).append(']');
    if (!runtimeText.isEmpty())
      sb.append(" RuntimeFilters: [").append(String.join(", ", runtimeText)).append(']');
    if (limit >= 0) sb.append(" PushedLimit: ").append(limit);
    if (columns != null) sb.append(" Columns: ").append(Arrays.toString(columns));
    sb.append(" Files: ").append(st[4]).append('/').append(st[0])
        .append(" (pruned partition=").append(st[1]).append(" stats=").append(st[2])
        .append(" limit=").append(st[3]).append(") Splits: ").append(st[7]);
    return sb.toString();
  }

  @Override public Batch toBatch() { return this; }

  /** readStream: the table's rows commit by commit (DkMicroBatchStream over libdk's dk_stream). */
  @Override public org.apache.spark.sql.connector.read.streaming.MicroBatchStream
      toMicroBatchStream(String checkpointLocation) {
    return new DkMicroBatchStream(new DkStreamOptions(options), table.schema(),
        checkpointLocation);
  }

  @Override public Statistics estimateStatistics() {
    long[] st = native_().stats();
    final long bytes = st[5], rows = st[6];
    return new Statistics() {
      @Override public OptionalLong sizeInBytes() { return OptionalLong.of(bytes); }
      @Override public OptionalLong numRows() {
        return rows >= 0 ? OptionalLong.of(rows) : OptionalLong.empty();
      }
    };
  }

  /** Files selected, for plan checks. */
  public long filesSelected() { return native_().stats()[4]; }

  @Override public synchronized InputPartition[] planInputPartitions() {
    if (splits == null) splits = native_().splits();
    InputPartition[] out = new InputPartition[splits.length];
    NativeSnapshot snap = table.snapshot();
    for (int i = 0; i < splits.length; i++)
      out[i] = new DkInputPartition(splits[i], snap.path(), snap.storageOptions());
    return out;
  }

  @Override public PartitionReaderFactory createReaderFactory() {
    readSchema();
    return new DkReaderFactory(keep, readSchema());
  }

  // ---- dynamic partition pruning ----

  @Override public NamedReference[] filterAttributes() {
    // only partition columns the scan outputs (Spark resolves them against the output)
    Set<String> out = new HashSet<>();
    for (String n : readSchema().fieldNames()) out.add(n.toLowerCase(Locale.ROOT));
    List<NamedReference> r = new ArrayList<>();
    for (String p : table.partitionColumnNames())
      if (out.contains(p.toLowerCase(Locale.ROOT))) r.add(Expressions.column(p));
    return r.toArray(new NamedReference[0]);
  }

  @Override public synchronized void filter(Predicate[] predicates) {
    Set<String> parts = new HashSet<>();
    for (String p : table.partitionColumnNames()) parts.add(p.toLowerCase(Locale.ROOT));
    List<String> add = new ArrayList<>();
    for (Predicate p : predicates) {
      Set<String> refs = new HashSet<>();
      String text = FilterTranslator.translate(p, refs);
      if (text == null || refs.isEmpty()) continue;
      boolean ok = true;
      for (String r : refs) ok &= parts.contains(r.toLowerCase(Locale.ROOT));
      // a runtime filter only prunes (Spark still joins or filters): keep the files of a null
      // partition value, which Spark's IN-subquery filters of row-level UPDATE / MERGE carry
      // as a NULL key that a plain IN never matches
      if (refs.size() == 1) {
        String r = refs.iterator().next();
        text = "(" + text + " OR (`" + r.replace("`", "``") + "` IS NULL))";
      }
      if (ok && table.snapshot().bindCheck(text) == null) add.add(text);
    }
    if (add.isEmpty()) return;
    runtimeText.addAll(add);
    List<String> all = new ArrayList<>();
    if (filter != null) all.add(filter);
    all.addAll(add);
    filter = String.join(" AND ", all);
    if (nscan != null) nscan.close();
    nscan = null;
    splits = null;
  }
}
