package io.dk.spark;

import java.lang.ref.Cleaner;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.types.pojo.Schema;

/** Owns a libdk change data feed (table + dk_changes): planned on the driver, planned again
 *  by each executor task that reads a slice of its files. */
final class NativeChanges implements AutoCloseable {
  private final long handle;
  private final Cleaner.Cleanable cleanable;

  /** storageOptions: an object-store table's (DkStreamOptions.storageOptions), else null. */
  NativeChanges(String path, String[] storageOptions, long[] bounds, String[] columns,
      String filter) {
    DkNative.ensureLoaded();
    this.handle = DkStreamNative.changesOpen(path, storageOptions, bounds, columns, filter);
    final long h = handle;
    this.cleanable = NativeSnapshot.CLEANER.register(this, () -> DkStreamNative.changesFree(h));
  }

  long handle() { return handle; }
  /** {start version, end version, schema version, files}. */
  long[] info() { return DkStreamNative.changesInfo(handle); }
  long[] fileSizes() { return DkStreamNative.changesFileSizes(handle); }

  Schema arrowSchema() {
    try (BufferAllocator a = new RootAllocator(); ArrowSchema s = ArrowSchema.allocateNew(a)) {
      DkStreamNative.changesSchema(handle, s.memoryAddress());
      return Data.importSchema(a, s, null);
    }
  }

  @Override public void close() { cleanable.clean(); }
}
