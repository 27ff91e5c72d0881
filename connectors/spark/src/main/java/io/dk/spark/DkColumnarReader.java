package io.dk.spark;

import java.io.IOException;
import java.util.List;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads one split: libdk fills an ArrowArrayStream (C Data Interface), arrow-c-data imports
 * each batch zero-copy and Spark sees the vectors through ArrowColumnVector. close() releases
 * the stream and checks that every native buffer was returned (the allocator throws on leaks).
 */
final class DkColumnarReader implements PartitionReader<ColumnarBatch> {
  private final BufferAllocator allocator;
  private final ArrowArrayStream stream;
  private final ArrowReader reader;
  private ColumnarBatch batch;
  private boolean closed;

  DkColumnarReader(byte[] split) {
    DkNative.ensureLoaded();
    BufferAllocator a = new RootAllocator();
    ArrowArrayStream s = null;
    try {
      s = ArrowArrayStream.allocateNew(a);
      DkNative.splitRead(split, s.memoryAddress());
      this.reader = Data.importArrayStream(a, s);
    } catch (RuntimeException | Error e) {
      if (s != null) s.close();
      a.close();
      throw e;
    }
    this.allocator = a;
    this.stream = s;
  }

  @Override public boolean next() throws IOException {
    if (!reader.loadNextBatch()) return false;
    VectorSchemaRoot root = reader.getVectorSchemaRoot();
    List<FieldVector> vs = root.getFieldVectors();
    ColumnVector[] cols = new ColumnVector[vs.size()];
    for (int i = 0; i < cols.length; i++) cols[i] = new ArrowColumnVector(vs.get(i));
    batch = new ColumnarBatch(cols, root.getRowCount());
    return true;
  }

  @Override public ColumnarBatch get() { return batch; }

  @Override public void close() throws IOException {
    if (closed) return;
    closed = true;
    try {
      reader.close();
    } finally {
      stream.close();
      allocator.close();
    }
  }
}
