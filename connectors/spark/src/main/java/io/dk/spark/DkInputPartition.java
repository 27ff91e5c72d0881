package io.dk.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One libdk split, serialized by dk_scan_split_serialize (self-contained for executors). */
public final class DkInputPartition implements InputPartition {
  private static final long serialVersionUID = 1L;
  final byte[] split;

  DkInputPartition(byte[] split) { this.split = split; }
}
