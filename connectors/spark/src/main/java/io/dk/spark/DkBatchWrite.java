package io.dk.spark;

import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;

/** A batch write: one {@link WritePlan} begun when Spark plans the job, committed by the
 *  driver after every task committed (Spark's commit coordinator lets one attempt of each
 *  task commit); an aborted job commits nothing (its files are left for VACUUM). */
final class DkBatchWrite implements BatchWrite {
  private final WritePlan plan;

  DkBatchWrite(DkTable table, StructType data, WriteOptions o, DkWriteBuilder.Mode mode,
      String predicate) {
    plan = new WritePlan(table, data, o, mode, predicate, "WRITE", null, o.txnAppId, o.txnVersion);
  }

  @Override public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    return plan.factory;
  }

  @Override public void commit(WriterCommitMessage[] messages) { plan.commit(messages); }

  @Override public void abort(WriterCommitMessage[] messages) { plan.close(); }
}
