package io.dk.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One libdk split, serialized by dk_scan_split_serialize (self-contained for executors), and
 *  for an object-store table its root and storage options (DkStorageOptions; null locally). */
public final class DkInputPartition implements InputPartition {
  private static final long serialVersionUID = 2L;
  final byte[] split;
  final String root;
  final String[] storageOptions;

  DkInputPartition(byte[] split, String root, String[] storageOptions) {
    this.split = split;
    this.root = root;
    this.storageOptions = storageOptions;
  }
}
