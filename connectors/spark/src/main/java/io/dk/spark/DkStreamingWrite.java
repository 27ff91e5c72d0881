package io.dk.spark;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.types.StructType;

/**
 * A streaming sink (append, or complete: every epoch replaces the table's rows), exactly once
 * as Delta's sink: each epoch commits one STREAMING UPDATE with the app transaction
 * (appId = the query id, version = the epoch id); an epoch the table already has (a restarted
 * query replaying it, or a concurrent commit of the same epoch) is skipped, its files left for
 * VACUUM. Executors write with the writer state of the table as the query found it.
 */
final class DkStreamingWrite implements StreamingWrite {
  private final DkTable table;
  private final StructType data;
  private final WriteOptions o;
  private final String queryId;
  private final boolean complete;

  DkStreamingWrite(DkTable table, StructType data, WriteOptions o, String queryId,
      boolean complete) {
    for (String[] bad : new String[][] {{"replaceWhere", o.replaceWhere},
        {"txnAppId", o.txnAppId}, {"overwriteSchema", o.overwriteSchema ? "true" : null}})
      if (bad[1] != null)
        throw WritePlan.invalid("dk streaming writes do not take the option " + bad[0]);
    this.table = table;
    this.data = data;
    this.o = o;
    this.queryId = queryId;
    this.complete = complete;
  }

  private DkWriteBuilder.Mode mode() {
    return complete ? DkWriteBuilder.Mode.OVERWRITE : DkWriteBuilder.Mode.APPEND;
  }

  /** The table's latest snapshot, opened with the storage options the query's table was
   *  found with (not re-resolved here: the epoch's thread may see no session). */
  private DkTable current() {
    String[] so = table.storageOptions();
    if (!DkNative.tableExists(table.path(), so)) return table; // still absent
    return new DkTable(SnapshotCache.latest(table.path(), so,
        NativeSnapshot.confineOption(table.options())), false, table.options());
  }

  @Override public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
    try (WritePlan p = new WritePlan(current(), data, o, DkWriteBuilder.Mode.APPEND, null,
        "STREAMING UPDATE", new LinkedHashMap<>(), null, -1)) {
      return p.factory;
    }
  }

  @Override public boolean useCommitCoordinator() { return true; }

  @Override public void commit(long epochId, WriterCommitMessage[] messages) {
    Map<String, String> params = new LinkedHashMap<>();
    params.put("outputMode", complete ? "Complete" : "Append");
    params.put("queryId", queryId);
    params.put("epochId", Long.toString(epochId));
    WritePlan p = new WritePlan(current(), data, o, mode(), null, "STREAMING UPDATE", params,
        queryId, epochId);
    if (p.skip) {
      p.close();
      return;
    }
    try {
      p.commit(messages);
    } catch (DkException e) {
      // the same epoch committed concurrently (another attempt of this query): already there
      if (e.getErrorClass() != DkException.ErrorClass.DK_CONCURRENT_TRANSACTION) throw e;
    }
  }

  @Override public void abort(long epochId, WriterCommitMessage[] messages) {}
}
