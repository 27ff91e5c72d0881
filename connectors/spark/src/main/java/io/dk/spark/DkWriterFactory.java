package io.dk.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.types.StructType;

/**
 * Shipped to executors: the table's path and, for an object-store table, its storage options
 * (the driver's: executors write through the same backend settings, as they read with those
 * of DkInputPartition), the driver transaction's writer state (dk_txn_writer_state), the
 * table's columns as the files get them (target, in table order) with the ordinal of each in
 * the incoming rows (-1: absent, written as nulls), and the write's replaceWhere check.
 */
final class DkWriterFactory implements DataWriterFactory, StreamingDataWriterFactory {
  private static final long serialVersionUID = 1L;

  final String path;
  final String[] storageOptions; // null for a local table
  final byte[] state;
  final StructType target;
  final int[] ordinals;
  final int nPart;
  final String replaceWhere;
  final long targetFileSize;
  final boolean skip;

  DkWriterFactory(String path, String[] storageOptions, byte[] state, StructType target,
      int[] ordinals, int nPart, String replaceWhere, long targetFileSize, boolean skip) {
    this.path = path;
    this.storageOptions = storageOptions;
    this.state = state;
    this.target = target;
    this.ordinals = ordinals;
    this.nPart = nPart;
    this.replaceWhere = replaceWhere;
    this.targetFileSize = targetFileSize;
    this.skip = skip;
  }

  @Override public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
    return new DkDataWriter(this);
  }

  @Override public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
    return new DkDataWriter(this);
  }
}
