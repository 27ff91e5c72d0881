package io.dk.spark;

import java.util.HashSet;
import java.util.Locale;
import java.util.Set;
import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.distributions.Distributions;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.expressions.filter.AlwaysTrue;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering;
import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsOverwriteV2;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * The write modes of a dk table, as Delta's DataFrameWriter offers them: append; truncate
 * (overwrite everything; with the write option {@code replaceWhere} a partition predicate,
 * with {@code partitionOverwriteMode=dynamic} or the session's
 * spark.sql.sources.partitionOverwriteMode the partitions written); overwrite(predicates)
 * ({@code INSERT INTO t REPLACE WHERE}, DataFrameWriterV2.overwrite), predicates on partition
 * columns only; dynamic partition overwrite ({@code INSERT OVERWRITE} under the dynamic mode).
 * The write it builds asks Spark to cluster rows by the partition columns (each partition's
 * rows reach one task, which writes its files), unless the write option
 * {@code clusterByPartitionColumns=false}.
 */
final class DkWriteBuilder implements SupportsOverwriteV2, SupportsDynamicOverwrite {
  enum Mode { APPEND, OVERWRITE, REPLACE_WHERE, DYNAMIC }

  private final DkTable table;
  private final LogicalWriteInfo info;
  private Mode mode = Mode.APPEND;
  private String predicate; // dk predicate text for REPLACE_WHERE

  DkWriteBuilder(DkTable table, LogicalWriteInfo info) {
    this.table = table;
    this.info = info;
  }

  @Override public WriteBuilder truncate() {
    mode = Mode.OVERWRITE;
    predicate = null;
    return this;
  }

  private String translate(Predicate[] ps, Set<String> refs) {
    StringBuilder sb = new StringBuilder();
    for (Predicate p : ps) {
      if (p instanceof AlwaysTrue) continue;
      String t = FilterTranslator.translate(p, refs);
      if (t == null) return null;
      if (sb.length() > 0) sb.append(" AND ");
      sb.append(t);
    }
    return sb.toString();
  }

  @Override public boolean canOverwrite(Predicate[] ps) {
    Set<String> refs = new HashSet<>();
    if (translate(ps, refs) == null) return false;
    Set<String> parts = new HashSet<>();
    for (String p : table.partitionColumnNames()) parts.add(p.toLowerCase(Locale.ROOT));
    for (String r : refs) if (!parts.contains(r.toLowerCase(Locale.ROOT))) return false;
    return true;
  }

  @Override public WriteBuilder overwrite(Predicate[] ps) {
    String t = translate(ps, new HashSet<>());
    if (t == null)
      throw new DkException(DkException.ErrorClass.DK_UNSUPPORTED_FEATURE, DkException.UNSUPPORTED,
          "dk cannot replace rows matching " + java.util.Arrays.toString(ps)
              + ": only predicates on partition columns that dk can evaluate");
    if (t.isEmpty()) return truncate();
    mode = Mode.REPLACE_WHERE;
    predicate = t;
    return this;
  }

  @Override public WriteBuilder overwriteDynamicPartitions() {
    mode = Mode.DYNAMIC;
    predicate = null;
    return this;
  }

  @Override public Write build() {
    Mode m = mode;
    String pred = predicate;
    WriteOptions o = new WriteOptions(info.options());
    if (m == Mode.OVERWRITE && o.replaceWhere != null) {
      m = Mode.REPLACE_WHERE;
      pred = o.replaceWhere;
    } else if (m == Mode.OVERWRITE && o.dynamicPartitionOverwrite
        && table.partitionColumnNames().length > 0) {
      m = Mode.DYNAMIC;
    }
    if (m == Mode.DYNAMIC && o.replaceWhere != null)
      throw new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, DkException.INVALID,
          "A 'replaceWhere' expression and 'partitionOverwriteMode'='dynamic' cannot both be set "
              + "in the DataFrameWriter options (DELTA_REPLACE_WHERE_WITH_DYNAMIC_PARTITION_OVERWRITE)");
    return new DkWrite(table, info, o, m, pred);
  }

  /** The write: rows clustered by the partition columns (no order within a task: libdk
   *  keeps one open file per partition), batch or streaming. */
  static final class DkWrite implements Write, RequiresDistributionAndOrdering {
    private final DkTable table;
    private final LogicalWriteInfo info;
    private final WriteOptions o;
    private final Mode mode;
    private final String predicate;

    DkWrite(DkTable table, LogicalWriteInfo info, WriteOptions o, Mode mode, String predicate) {
      this.table = table;
      this.info = info;
      this.o = o;
      this.mode = mode;
      this.predicate = predicate;
    }

    @Override public String description() {
      return "dk " + mode.name().toLowerCase(Locale.ROOT) + " into " + table.name();
    }

    @Override public Distribution requiredDistribution() {
      String[] parts = table.partitionColumnNames();
      if (parts.length == 0 || !o.clusterByPartitionColumns) return Distributions.unspecified();
      Expression[] e = new Expression[parts.length];
      for (int i = 0; i < parts.length; i++) e[i] = Expressions.column(parts[i]);
      return Distributions.clustered(e);
    }

    @Override public SortOrder[] requiredOrdering() { return new SortOrder[0]; }

    @Override public BatchWrite toBatch() {
      return new DkBatchWrite(table, info.schema(), o, mode, predicate);
    }

    @Override public StreamingWrite toStreaming() {
      if (mode != Mode.APPEND && mode != Mode.OVERWRITE)
        throw new DkException(DkException.ErrorClass.DK_UNSUPPORTED_FEATURE,
            DkException.UNSUPPORTED, "dk streaming writes append or complete; got " + mode);
      return new DkStreamingWrite(table, info.schema(), o, info.queryId(), mode == Mode.OVERWRITE);
    }
  }
}
