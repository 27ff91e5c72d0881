package io.dk.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.DeltaBatchWrite;
import org.apache.spark.sql.connector.write.DeltaWrite;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.DeltaWriter;
import org.apache.spark.sql.connector.write.DeltaWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.SupportsDelta;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Row-level DELETE / UPDATE / MERGE planned by Spark (SupportsRowLevelOperations) with the
 * delta-based (merge-on-read) plan, for conditions libdk cannot evaluate exactly itself (a
 * DELETE whose condition it can evaluate runs whole in libdk: DkTable.deleteWhere). The row id
 * is the `_metadata` struct (file_path, row_index): executors collect the (file, row index)
 * of every deleted or updated row and write updated and inserted rows through libdk's writer
 * (DkDataWriter); the driver stages the rows as deletion vectors (dk_txn_delete_rows), the
 * new files, and the statement's operationMetrics in delta-spark's names, and commits once on
 * the snapshot the scan read (libdk's conflict checks: every file counts as read).
 *
 * <p>Needs deletion vectors (a table without them is copy-on-write in delta-spark; dk's
 * connector does that only for DELETEs libdk evaluates). UPDATE and MERGE are refused on
 * tables with the change data feed (the pre-images are not written here) and with row
 * tracking (libdk does not write materialized row ids yet).
 */
final class DkRowLevelOperation implements SupportsDelta {
  private final DkTable table;
  private final Command command;
  private final CaseInsensitiveStringMap options;

  DkRowLevelOperation(DkTable table, Command command, CaseInsensitiveStringMap options) {
    this.table = table;
    this.command = command;
    this.options = options;
  }

  /** Refuses what this plan cannot do, when Spark asks for the write (Spark builds the
   *  operation during analysis, before it knows whether deleteWhere takes a DELETE). */
  private void check() {
    Map<String, String> p = table.properties();
    if (!"true".equalsIgnoreCase(p.get("delta.enableDeletionVectors")))
      throw refuse("needs deletion vectors (delta.enableDeletionVectors = true)");
    if (command != Command.DELETE) {
      if ("true".equalsIgnoreCase(p.get("delta.enableChangeDataFeed")))
        throw refuse("on a table with the change data feed is not supported by the Spark "
            + "connector yet (use dk's UPDATE / MERGE)");
      if (table.rowTracking())
        throw refuse("on a table with row tracking is not supported yet");
    }
  }

  private DkException refuse(String why) {
    return new DkException(DkException.ErrorClass.DK_UNSUPPORTED_FEATURE, DkException.UNSUPPORTED,
        command + " on " + table.name() + " through Spark's row-level plan " + why);
  }

  @Override public Command command() { return command; }

  @Override public ScanBuilder newScanBuilder(CaseInsensitiveStringMap o) {
    return new DkScanBuilder(table, o);
  }

  @Override public NamedReference[] rowId() {
    return new NamedReference[] {Expressions.column(DkTable.METADATA)};
  }

  /** Updates arrive as update() (counted as such for the metrics). */
  @Override public boolean representUpdateAsDeleteAndInsert() { return false; }

  @Override public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    check();
    return new DeltaWriteBuilder() {
      @Override public DeltaWrite build() {
        return new DeltaWrite() {
          @Override public DeltaBatchWrite toBatch() { return new Batch(info); }
        };
      }
    };
  }

  /** Driver side: the transaction on the scanned snapshot, begun when Spark plans the write. */
  private final class Batch implements DeltaBatchWrite {
    private final WritePlan plan;

    Batch(LogicalWriteInfo info) {
      Map<String, String> params = new LinkedHashMap<>();
      params.put("predicate", "[]");
      plan = new WritePlan(table, table.schema(), new WriteOptions(options),
          DkWriteBuilder.Mode.APPEND, null, command.toString(), params, null, -1);
    }

    @Override public DeltaWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      return new Factory(plan.factory);
    }

    @Override public boolean useCommitCoordinator() { return true; }

    @Override public void commit(WriterCommitMessage[] messages) {
      plan.commitRowLevel(command.toString(), messages);
    }

    @Override public void abort(WriterCommitMessage[] messages) { plan.close(); }
  }

  private static final class Factory implements DeltaWriterFactory {
    private static final long serialVersionUID = 1L;
    private final DkWriterFactory inner;

    Factory(DkWriterFactory inner) { this.inner = inner; }

    @Override public DeltaWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new Writer(inner);
    }
  }

  /** Executor side: rows to delete as (file, row index), rows to write through libdk. */
  private static final class Writer implements DeltaWriter<InternalRow> {
    private final DkWriterFactory f;
    private DkDataWriter data; // opened at the first row written
    private final List<String> files = new ArrayList<>();
    private long[] rows = new long[64];
    private long updated, inserted;

    Writer(DkWriterFactory f) { this.f = f; }

    private void mark(InternalRow id) {
      // the `_metadata` struct: file_path (0) as Spark shows it, row_index (6)
      InternalRow m = id.getStruct(0, 7);
      if (files.size() == rows.length) rows = java.util.Arrays.copyOf(rows, rows.length * 2);
      rows[files.size()] = m.getLong(6);
      files.add(libdkUri(m.getUTF8String(0).toString()));
    }

    private void put(InternalRow row) {
      if (data == null) data = new DkDataWriter(f);
      data.write(row);
    }

    @Override public void delete(InternalRow metadata, InternalRow id) { mark(id); }

    @Override public void update(InternalRow metadata, InternalRow id, InternalRow row) {
      mark(id);
      put(row);
      updated++;
    }

    @Override public void insert(InternalRow row) {
      put(row);
      inserted++;
    }

    @Override public WriterCommitMessage commit() {
      DkCommitMessage w = data == null ? null : (DkCommitMessage) data.commit();
      return new RowLevelMessage(w, files.toArray(new String[0]),
          java.util.Arrays.copyOf(rows, files.size()), updated, inserted);
    }

    @Override public void abort() {}

    @Override public void close() {
      if (data != null) data.close();
      data = null;
    }
  }

  /** "file:/p" (Spark's form of `_metadata.file_path`) as libdk's scans name it, "file:///p". */
  static String libdkUri(String p) {
    return p.startsWith("file:/") && !p.startsWith("file:///") ? "file:///" + p.substring(6) : p;
  }

  /** One task's part: the rows it wrote (or null), the rows it deleted or updated. */
  static final class RowLevelMessage implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final DkCommitMessage written;
    final String[] files;
    final long[] rows;
    final long updated, inserted;

    RowLevelMessage(DkCommitMessage written, String[] files, long[] rows, long updated,
        long inserted) {
      this.written = written;
      this.files = files;
      this.rows = rows;
      this.updated = updated;
      this.inserted = inserted;
    }
  }
}
