package io.dk.spark;

import java.lang.ref.Cleaner;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.types.pojo.Schema;

/** Owns a libdk stream (table + dk_stream) and hands out batches between two offsets. */
final class NativeStream implements AutoCloseable {
  private final long handle;
  private final Cleaner.Cleanable cleanable;

  NativeStream(DkStreamOptions o, boolean availableNow, String[] columns) {
    DkNative.ensureLoaded();
    this.handle = DkStreamNative.streamOpen(o.path, o.storageOptions,
        o.nativeOptions(availableNow), o.excludeRegex, columns);
    final long h = handle;
    this.cleanable = NativeSnapshot.CLEANER.register(this, () -> DkStreamNative.streamFree(h));
  }

  String initialOffset() { return DkStreamNative.streamInitialOffset(handle); }

  String latestOffset(String start, long maxFiles, long maxBytes) {
    return DkStreamNative.streamLatestOffset(handle, start, maxFiles, maxBytes);
  }

  Schema arrowSchema() {
    try (BufferAllocator a = new RootAllocator(); ArrowSchema s = ArrowSchema.allocateNew(a)) {
      DkStreamNative.streamSchema(handle, s.memoryAddress());
      return Data.importSchema(a, s, null);
    }
  }

  /** The files of the batch (start, end]: a native batch handle (freed by Batch.close). */
  Batch batch(String start, String end) {
    return new Batch(DkStreamNative.streamBatch(handle, start, end));
  }

  static final class Batch implements AutoCloseable {
    final long handle;
    private final Cleaner.Cleanable cleanable;

    Batch(long handle) {
      this.handle = handle;
      this.cleanable = NativeSnapshot.CLEANER.register(this, () -> DkStreamNative.batchFree(handle));
    }

    long[] fileSizes() { return DkStreamNative.batchFileSizes(handle); }
    @Override public void close() { cleanable.clean(); }
  }

  @Override public void close() { cleanable.clean(); }
}
