package io.dk.spark;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A table DDL is about to create or replace (DkCatalog as a StagingTableCatalog): CREATE TABLE,
 * CTAS, REPLACE TABLE [AS SELECT], CREATE OR REPLACE TABLE [AS SELECT] on a path. Nothing is
 * visible until one commit: the AS SELECT write's (operation "... AS SELECT": new metadata
 * with the statement's schema, partitioning and properties, every existing file removed, the
 * query's files added), or, without a query, {@link #commitStagedChanges}'s metadata-only
 * commit. abortStagedChanges commits nothing. As delta-spark: an existing table's protocol is
 * kept (never downgraded) and its history continues.
 */
final class DkStagedTable extends DkTable implements StagedTable {
  /** The table being replaced, or null (a new table). */
  final NativeSnapshot existing;
  final Map<String, String> properties;
  final String description;
  private final String operation;
  private volatile boolean written;

  /** StagedTable's and TruncatableTable's (through DkTable's DELETE) defaults agree: none. */
  @Override public org.apache.spark.sql.connector.metric.CustomTaskMetric[] reportDriverMetrics() {
    return StagedTable.super.reportDriverMetrics();
  }

  DkStagedTable(String path, NativeSnapshot existing, StructType schema, Transform[] partitioning,
      Map<String, String> props, String operation) {
    super(path, WritePlan.nullable(schema), identityColumns(partitioning),
        CaseInsensitiveStringMap.empty());
    this.existing = existing;
    this.operation = operation;
    Map<String, String> conf = new LinkedHashMap<>();
    String comment = null;
    for (Map.Entry<String, String> e : props.entrySet()) {
      String k = e.getKey(), kl = k.toLowerCase(Locale.ROOT);
      if (kl.equals("comment")) comment = e.getValue();
      else if (kl.equals("provider")) {
        String v = e.getValue().toLowerCase(Locale.ROOT);
        if (!v.equals("dk") && !v.equals("delta"))
          throw WritePlan.invalid("the dk catalog makes Delta tables: USING dk (or delta), not "
              + e.getValue());
      } else if (kl.startsWith("option.delta.")) conf.put(k.substring(7), e.getValue());
      else if (!kl.startsWith("option.") && !kl.equals("location") && !kl.equals("owner")
          && !kl.equals("external") && !kl.equals("path") && !kl.equals("is_managed_location"))
        conf.put(k, e.getValue());
    }
    this.properties = conf;
    this.description = comment;
  }

  /** commitInfo.operation for a commit with (AS SELECT) or without a query. */
  String operation(boolean asSelect) { return asSelect ? operation + " AS SELECT" : operation; }

  Map<String, String> operationParameters() {
    Map<String, String> p = new LinkedHashMap<>();
    // delta-spark's CreateDeltaTableCommand parameters (description null when none)
    p.put("partitionBy", WritePlan.jsonList(partitionColumnNames()));
    p.put("description", description);
    p.put("isManaged", "false");
    Map<String, String> props = WriteOptions.tableDefaults(); // as WritePlan commits them
    props.putAll(properties);
    p.put("properties", WritePlan.jsonObject(props));
    p.put("clusterBy", "[]");
    return p;
  }

  void markWritten() { written = true; }

  @Override public void commitStagedChanges() {
    if (written) return;
    try (WritePlan p = new WritePlan(this, schema(), new WriteOptions(options()),
        DkWriteBuilder.Mode.APPEND, null, null, new LinkedHashMap<>(), null, -1)) {
      p.commit(new WriterCommitMessage[0]);
    }
  }

  @Override public void abortStagedChanges() {}
}
