package io.dk.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Columnar-only reader factory (executor side). */
public final class DkReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;
  private final int[] keep;
  private final StructType schema;  // Spark types of the columns returned (after `keep`)

  DkReaderFactory(int[] keep, StructType schema) {
    this.keep = keep;
    this.schema = schema;
  }

  @Override public PartitionReader<InternalRow> createReader(InputPartition partition) {
    throw new UnsupportedOperationException("dk reads columnar batches only");
  }

  @Override public boolean supportColumnarReads(InputPartition partition) { return true; }

  @Override public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition p) {
    DkInputPartition d = (DkInputPartition) p;
    return new DkColumnarReader(d.split, d.root, d.storageOptions, keep, schema);
  }
}
