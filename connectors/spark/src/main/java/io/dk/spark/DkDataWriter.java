package io.dk.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.execution.arrow.ArrowFieldWriter;
import org.apache.spark.sql.execution.arrow.ArrowWriter$;
import org.apache.spark.sql.util.ArrowUtils;

/**
 * One task's writer: a libdk writer transaction (begun from the driver's writer state) that
 * pulls the task's rows as Arrow batches and writes them as data files with Delta statistics
 * (dk_txn_write: partition directories, file rolling, CHECK constraints, replaceWhere). Rows
 * become Arrow columns through Spark's own ArrowFieldWriters (the ones toPandas and Arrow UDFs
 * use), in the table's column order, a column the rows lack written as nulls (mergeSchema);
 * each batch crosses into libdk once, through the Arrow C Data Interface (no per-value JNI).
 *
 * <p>Spark hands the whole partition to {@link #writeAll}, which libdk drains as one stream
 * (so a task writes one file per partition and target size); rows given one at a time
 * ({@link #write}) are buffered and written a batch at a time.
 */
final class DkDataWriter implements DataWriter<InternalRow> {
  static final int BATCH_ROWS = 32768;
  static final long BATCH_BYTES = 32L << 20;

  private final DkWriterFactory f;
  private final BufferAllocator allocator;
  private final VectorSchemaRoot root;
  private final ArrowFieldWriter[] fields;
  private long handle;
  private final List<String> partitions = new ArrayList<>();
  private Iterator<InternalRow> rows; // the stream's source while writeAll runs
  private int buffered;                // rows in the root not yet handed to libdk
  private boolean exported;

  DkDataWriter(DkWriterFactory f) {
    this.f = f;
    DkNative.ensureLoaded();
    allocator = ArrowUtils.rootAllocator().newChildAllocator("dk-write", 0, Long.MAX_VALUE);
    root = VectorSchemaRoot.create(ArrowUtils.toArrowSchema(f.target, "UTC", true, false), allocator);
    fields = new ArrowFieldWriter[f.target.fields().length];
    for (int i = 0; i < fields.length; i++)
      fields[i] = ArrowWriter$.MODULE$.createFieldWriter(root.getVector(i));
    if (!f.skip) {
      try {
        handle = DkNative.writerOpen(f.path, f.storageOptions, f.state, f.replaceWhere,
            f.targetFileSize, 1);
      } catch (RuntimeException e) {
        close();
        throw e;
      }
    }
  }

  private void append(InternalRow r) {
    for (int i = 0; i < fields.length; i++) {
      int o = f.ordinals[i];
      if (o >= 0) {
        fields[i].write(r, o);
      } else {
        fields[i].setNull();
        fields[i].count_$eq(fields[i].count() + 1);
      }
    }
    buffered++;
  }

  @Override public void write(InternalRow row) {
    if (f.skip) return;
    append(row);
    if (buffered >= BATCH_ROWS) flush();
  }

  @Override public void writeAll(Iterator<InternalRow> it) {
    if (f.skip) {
      while (it.hasNext()) it.next();
      return;
    }
    flush();
    rows = it;
    try {
      drain();
    } finally {
      rows = null;
    }
  }

  private void flush() {
    if (buffered > 0) drain();
  }

  private void drain() {
    String[] p = DkNative.writerWriteAll(handle, this, f.nPart);
    if (p != null) Collections.addAll(partitions, p);
  }

  private long bytes() {
    long b = 0;
    for (ArrowFieldWriter w : fields) b += w.getSizeInBytes();
    return b;
  }

  /** Called by libdk (dk_jni.c): the stream's schema. */
  void exportSchema(long address) {
    Data.exportSchema(allocator, root.getSchema(), null, ArrowSchema.wrap(address));
    exported = false;
  }

  /** Called by libdk (dk_jni.c) once the previous batch was released: fills the next batch
   *  and exports it at `address`; false at the end of the stream. */
  boolean nextBatch(long address) {
    if (exported) { // libdk released the previous batch: reuse the vectors
      root.setRowCount(0);
      for (ArrowFieldWriter w : fields) w.reset();
      exported = false;
    }
    if (rows != null) {
      int n = buffered;
      while (n < BATCH_ROWS && rows.hasNext()) {
        append(rows.next());
        n++;
        if ((n & 4095) == 0 && bytes() > BATCH_BYTES) break;
      }
    }
    if (buffered == 0) return false;
    // the field writers are driven directly (not through ArrowWriter.write, whose finish
    // would first set the root's row count to its own count of 0 and lose string offsets)
    for (ArrowFieldWriter w : fields) w.finish();
    root.setRowCount(buffered);
    Data.exportVectorSchemaRoot(allocator, root, null, ArrowArray.wrap(address));
    buffered = 0;
    exported = true;
    return true;
  }

  @Override public WriterCommitMessage commit() {
    if (f.skip) return new DkCommitMessage(new byte[0], new String[0], 0, 0, 0);
    flush();
    long[] s = DkNative.writerStats(handle);
    return new DkCommitMessage(DkNative.writerStagedAdds(handle),
        partitions.toArray(new String[0]), s[0], s[1], s[2]);
  }

  /** The files written stay (unreferenced, for VACUUM), as Spark leaves an aborted task's. */
  @Override public void abort() {}

  @Override public void close() {
    if (handle != 0) DkNative.writerFree(handle);
    handle = 0;
    root.close();
    allocator.close();
  }
}
