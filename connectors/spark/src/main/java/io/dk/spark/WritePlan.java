package io.dk.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * One write's transaction on the driver, as delta-spark's WriteIntoDelta plans it: begins a
 * libdk transaction on the table's snapshot (or one creating the table), stages the metadata a
 * new table, mergeSchema or overwriteSchema needs, the app transaction of an idempotent write,
 * and the removes of an overwrite (all files, or those of the partitions a replaceWhere
 * selects); hands executors its writer state ({@link DkWriterFactory}); then stages the
 * executors' adds, for a dynamic partition overwrite removes the files of the partitions they
 * wrote, and commits once (libdk checks conflicts and retries).
 */
final class WritePlan implements AutoCloseable {
  private final DkTable table;
  private final WriteOptions o;
  private final DkWriteBuilder.Mode mode;
  private final String[] partCols;
  private final DkStagedTable staged; // DDL (CREATE / REPLACE [AS SELECT]), or null
  private final NativeSnapshot base;
  private NativeTxn txn;
  /** An idempotent write whose version the table already has: nothing is written. */
  final boolean skip;
  private long removedFiles, removedBytes;
  final DkWriterFactory factory;

  /** params: commitInfo.operationParameters; null = WRITE's (mode, partitionBy, ...). For a
   *  DkStagedTable the DDL's operation and parameters are used instead (params null: the
   *  AS SELECT write; non-null: the metadata-only commit). appId / appVersion: an idempotent
   *  write (null / -1 = none). */
  WritePlan(DkTable table, StructType data, WriteOptions o, DkWriteBuilder.Mode mode,
      String predicate, String operation, Map<String, String> params, String appId,
      long appVersion) {
    this.table = table;
    this.o = o;
    this.mode = mode;
    staged = table instanceof DkStagedTable ? (DkStagedTable) table : null;
    // the snapshot the transaction reads: the table's, the one DDL replaces, or none (create)
    base = staged != null ? staged.existing : table.exists() ? table.snapshot() : null;
    if (staged != null) {
      operation = staged.operation(params == null);
      params = staged.operationParameters();
    }
    boolean overwrite = mode != DkWriteBuilder.Mode.APPEND;
    if (o.overwriteSchema && (mode == DkWriteBuilder.Mode.REPLACE_WHERE
        || mode == DkWriteBuilder.Mode.DYNAMIC))
      throw invalid("'overwriteSchema' cannot be used with replaceWhere or dynamic partition "
          + "overwrite (DELTA_OVERWRITE_SCHEMA_WITH_DYNAMIC_PARTITION_OVERWRITE)");
    boolean newMeta = base == null || staged != null
        || (o.overwriteSchema && mode == DkWriteBuilder.Mode.OVERWRITE);
    StructType target;
    String schemaJson = null;
    String[] parts = table.partitionColumnNames();
    if (newMeta) {
      target = nullable(data);
      parts = normalize(parts, target);
      schemaJson = target.json();
    } else {
      StructType cur = table.schema();
      List<StructField> added = new ArrayList<>();
      for (StructField f : data.fields()) {
        StructField g = SparkTypes.find(cur, f.name());
        if (g == null)
          added.add(new StructField(f.name(), f.dataType().asNullable(), true, Metadata.empty()));
        else if (!g.dataType().catalogString().equals(f.dataType().catalogString()))
          throw mismatch("column '" + f.name() + "' is " + g.dataType().simpleString()
              + " in the table and " + f.dataType().simpleString() + " in the data");
      }
      if (!added.isEmpty() && !o.mergeSchema)
        throw mismatch("the data has columns the table lacks: " + names(added)
            + " (write with option mergeSchema=true to add them)");
      List<StructField> all = new ArrayList<>(java.util.Arrays.asList(cur.fields()));
      all.addAll(added);
      target = new StructType(all.toArray(new StructField[0]));
      if (!added.isEmpty()) {
        StructType ds = table.deltaSchema();
        if (ds == null) throw mismatch("the table's schema cannot be extended by Spark");
        List<StructField> dall = new ArrayList<>(java.util.Arrays.asList(ds.fields()));
        dall.addAll(added);
        schemaJson = new StructType(dall.toArray(new StructField[0])).json();
      }
    }
    this.partCols = parts;
    if (params == null) {
      params = new LinkedHashMap<>();
      params.put("mode", overwrite ? "Overwrite" : "Append");
      params.put("partitionBy", jsonList(parts));
      if (mode == DkWriteBuilder.Mode.REPLACE_WHERE) params.put("predicate", predicate); // as delta-spark
      if (mode == DkWriteBuilder.Mode.DYNAMIC) params.put("isDynamicPartitionOverwrite", "true");
      if (o.mergeSchema) params.put("canMergeSchema", "true");
      if (o.overwriteSchema && newMeta && base != null) params.put("canOverwriteSchema", "true");
    }
    txn = base != null
        ? NativeTxn.begin(base, operation, jsonObject(params), o.userMetadata)
        : NativeTxn.beginCreate(table.path(), table.storageOptions(), operation,
            jsonObject(params), o.userMetadata);
    try {
      if (schemaJson != null) {
        Map<String, String> conf;
        if (staged != null) conf = staged.properties;
        else if (base != null) conf = table.properties();
        else conf = o.tableProperties;
        if (base == null || staged != null) { // new / replaced: the session's defaults first
          Map<String, String> d = WriteOptions.tableDefaults();
          d.putAll(conf);
          conf = d;
        }
        txn.setMetadata(schemaJson, java.util.Arrays.asList(parts), conf, null,
            staged != null ? staged.description : null);
      }
      boolean done = false;
      if (appId != null) {
        done = txn.appVersion(appId) >= appVersion;
        if (!done) txn.setAppVersion(appId, appVersion);
      }
      skip = done;
      if (!skip && base != null && (staged != null || mode == DkWriteBuilder.Mode.OVERWRITE
          || mode == DkWriteBuilder.Mode.REPLACE_WHERE)) {
        String f = mode == DkWriteBuilder.Mode.REPLACE_WHERE ? predicate : null;
        for (long i : txn.readFiles(f, true)) remove(i);
      }
      int[] ordinals = new int[target.fields().length];
      for (int i = 0; i < ordinals.length; i++) ordinals[i] = indexOf(data, target.fields()[i].name());
      factory = new DkWriterFactory(table.path(), table.storageOptions(), txn.writerState(),
          target, ordinals, parts.length,
          mode == DkWriteBuilder.Mode.REPLACE_WHERE ? predicate : null, o.targetFileSize, skip);
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  private void remove(long i) {
    removedBytes += txn.removeFile(i);
    removedFiles++;
  }

  /** Stages every task's adds (and for dynamic overwrite the removes) and commits;
   *  {version, attempts, commit timestamp, checkpoint}, or null when nothing was committed
   *  (an idempotent write already applied). */
  long[] commit(WriterCommitMessage[] messages) {
    try {
      if (skip) return null;
      long files = 0, rows = 0, bytes = 0;
      List<String> written = new ArrayList<>();
      int writtenRows = 0;
      for (WriterCommitMessage m : messages) {
        if (!(m instanceof DkCommitMessage)) continue;
        DkCommitMessage c = (DkCommitMessage) m;
        if (c.adds.length > 0) txn.addStaged(c.adds);
        files += c.files;
        rows += c.rows;
        bytes += c.bytes;
        for (String v : c.partitions) written.add(v);
        writtenRows += partCols.length == 0 ? 0 : c.partitions.length / partCols.length;
      }
      if (mode == DkWriteBuilder.Mode.DYNAMIC && base != null && writtenRows > 0)
        for (long i : txn.readPartitions(written.toArray(new String[0]), writtenRows)) remove(i);
      txn.setMetric("numFiles", files);
      txn.setMetric("numOutputRows", rows);
      txn.setMetric("numOutputBytes", bytes);
      if ((mode != DkWriteBuilder.Mode.APPEND || staged != null) && base != null) {
        txn.setMetric("numRemovedFiles", removedFiles);
        txn.setMetric("numRemovedBytes", removedBytes);
      }
      long[] r = txn.commit();
      if (staged != null) staged.markWritten();
      return r;
    } finally {
      close();
    }
  }

  /** Commits a row-level DELETE / UPDATE / MERGE (DkRowLevelOperation): the rows the tasks
   *  deleted or updated become deletion vectors, the rows they wrote new files, and the
   *  operationMetrics are the command's as delta-spark names them. Nothing is committed when
   *  no row changed (as delta-spark); returns the commit's {version, ...} or null. */
  long[] commitRowLevel(String command, WriterCommitMessage[] messages) {
    try {
      List<String> files = new ArrayList<>();
      long[] rows = new long[0];
      long updated = 0, inserted = 0, addFiles = 0, addBytes = 0;
      for (WriterCommitMessage m : messages) {
        if (!(m instanceof DkRowLevelOperation.RowLevelMessage)) continue;
        DkRowLevelOperation.RowLevelMessage r = (DkRowLevelOperation.RowLevelMessage) m;
        if (r.written != null && r.written.adds.length > 0) txn.addStaged(r.written.adds);
        if (r.written != null) {
          addFiles += r.written.files;
          addBytes += r.written.bytes;
        }
        int at = rows.length;
        rows = java.util.Arrays.copyOf(rows, at + r.rows.length);
        System.arraycopy(r.rows, 0, rows, at, r.rows.length);
        java.util.Collections.addAll(files, r.files);
        updated += r.updated;
        inserted += r.inserted;
      }
      if (files.isEmpty() && inserted == 0) return null;
      long[] d = files.isEmpty() ? new long[7] : txn.deleteRows(files.toArray(new String[0]), rows);
      if (!command.equals("DELETE")) {
        // {deleted rows, files touched, files removed, removed bytes, DVs added, removed, updated}
        long dvAdded = d[4] + d[6], dvRemoved = d[5] + d[6];
        txn.clearMetrics();
        boolean merge = command.equals("MERGE");
        String[][] kv = merge ? new String[][] {
            {"numTargetRowsInserted", "" + inserted}, {"numTargetRowsUpdated", "" + updated},
            {"numTargetRowsDeleted", "" + (d[0] - updated)}, {"numTargetRowsCopied", "0"},
            {"numOutputRows", "" + (inserted + updated)},
            {"numTargetFilesAdded", "" + addFiles}, {"numTargetFilesRemoved", "" + d[1]},
            {"numTargetBytesAdded", "" + addBytes}, {"numTargetBytesRemoved", "" + d[3]},
            {"numTargetDeletionVectorsAdded", "" + dvAdded},
            {"numTargetDeletionVectorsRemoved", "" + dvRemoved},
            {"numTargetDeletionVectorsUpdated", "" + d[6]},
            {"numTargetChangeFilesAdded", "0"}}
          : new String[][] {
            {"numUpdatedRows", "" + updated}, {"numCopiedRows", "0"},
            {"numAddedFiles", "" + addFiles}, {"numRemovedFiles", "" + d[1]},
            {"numAddedBytes", "" + addBytes}, {"numRemovedBytes", "" + d[3]},
            {"numDeletionVectorsAdded", "" + dvAdded}, {"numDeletionVectorsRemoved", "" + dvRemoved},
            {"numDeletionVectorsUpdated", "" + d[6]}, {"numAddedChangeFiles", "0"}};
        for (String[] e : kv) txn.setMetric(e[0], Long.parseLong(e[1]));
      }
      return txn.commit();
    } finally {
      close();
    }
  }

  @Override public void close() {
    if (txn != null) txn.close();
    txn = null;
  }

  // ---- helpers ----

  /** Every field nullable, nested ones too (delta-spark writes new tables with
   *  data.schema.asNullable). */
  static StructType nullable(StructType t) { return t.asNullable(); }

  /** Partition column names as the data spells them (each must be a column). */
  private static String[] normalize(String[] parts, StructType data) {
    String[] out = new String[parts.length];
    for (int i = 0; i < parts.length; i++) {
      StructField f = SparkTypes.find(data, parts[i]);
      if (f == null)
        throw invalid("partition column '" + parts[i] + "' is not a column of the data "
            + data.simpleString());
      out[i] = f.name();
    }
    return out;
  }

  private static int indexOf(StructType t, String name) {
    String n = name.toLowerCase(Locale.ROOT);
    for (int i = 0; i < t.fields().length; i++)
      if (t.fields()[i].name().toLowerCase(Locale.ROOT).equals(n)) return i;
    return -1;
  }

  private static String names(List<StructField> fs) {
    StringBuilder sb = new StringBuilder();
    for (StructField f : fs) sb.append(sb.length() == 0 ? "" : ", ").append(f.name());
    return sb.toString();
  }

  static DkException invalid(String msg) {
    return new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, DkException.INVALID, msg);
  }

  static DkException mismatch(String msg) {
    return new DkException(DkException.ErrorClass.DK_SCHEMA_MISMATCH, DkException.INVALID,
        "A schema mismatch detected when writing to the Delta table: " + msg
            + " (DELTA_METADATA_MISMATCH)");
  }

  static String jsonString(String s) {
    if (s == null) return "null";
    StringBuilder sb = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') sb.append('\\').append(c);
      else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
      else sb.append(c);
    }
    return sb.append('"').toString();
  }

  static String jsonList(String[] v) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < v.length; i++) sb.append(i == 0 ? "" : ",").append(jsonString(v[i]));
    return sb.append(']').toString();
  }

  static String jsonObject(Map<String, String> m) {
    StringBuilder sb = new StringBuilder("{");
    for (Map.Entry<String, String> e : m.entrySet())
      sb.append(sb.length() == 1 ? "" : ",").append(jsonString(e.getKey())).append(':')
          .append(jsonString(e.getValue()));
    return sb.append('}').toString();
  }
}
