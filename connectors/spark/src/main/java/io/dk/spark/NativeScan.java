package io.dk.spark;

import java.lang.ref.Cleaner;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.types.pojo.Schema;

/** Owns a planned libdk scan (driver side): schema, statistics, residual, serialized splits. */
public final class NativeScan implements AutoCloseable {
  private static final class Free implements Runnable {
    private final long handle;
    Free(long handle) { this.handle = handle; }
    @Override public void run() { DkNative.scanFree(handle); }
  }

  private final long handle;
  private final Cleaner.Cleanable cleanable;

  NativeScan(NativeSnapshot snap, String[] columns, String filter, long limit, int metadataFields,
      long splitTarget, long openCost) {
    this.handle = DkNative.scanNew(snap.handle(), columns, filter, limit, metadataFields,
        splitTarget, openCost);
    this.cleanable = NativeSnapshot.CLEANER.register(this, new Free(handle));
  }

  public Schema arrowSchema() {
    try (BufferAllocator a = new RootAllocator();
        ArrowSchema s = ArrowSchema.allocateNew(a)) {
      DkNative.scanSchema(handle, s.memoryAddress());
      return Data.importSchema(a, s, null);
    }
  }

  /** Residual predicate text (dk grammar) or null when the file selection is exact. */
  public String residual() { return DkNative.scanResidual(handle); }

  /** files_total, pruned_partition, pruned_stats, pruned_limit, files_selected,
   *  bytes_selected, rows_estimated, splits. */
  public long[] stats() { return DkNative.scanStats(handle); }

  public byte[][] splits() { return DkNative.scanSplits(handle); }

  @Override public void close() { cleanable.clean(); }
}
