package io.dk.spark;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What one task wrote: its adds as libdk's staged-add lines (dk_txn_staged_adds), the
 *  partitions it wrote (rows of serialized partition values, null = null) and its totals. */
final class DkCommitMessage implements WriterCommitMessage {
  private static final long serialVersionUID = 1L;

  final byte[] adds;
  final String[] partitions;
  final long files, rows, bytes;

  DkCommitMessage(byte[] adds, String[] partitions, long files, long rows, long bytes) {
    this.adds = adds;
    this.partitions = partitions;
    this.files = files;
    this.rows = rows;
    this.bytes = bytes;
  }
}
