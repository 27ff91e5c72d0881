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
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;

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

  private final int[] keep;
  private final StructType schema;

  private final AutoCloseable owner;

  DkColumnarReader(byte[] split, String root, String[] storageOptions, int[] keep,
      StructType schema) {
    this(addr -> {
      if (storageOptions != null) DkNative.splitReadWith(split, addr, root, storageOptions);
      else DkNative.splitRead(split, addr);
    }, null, keep, schema);
  }

  /** Reads the stream `fill` writes at the address it is given; `owner` (the native handle
   *  the stream was opened from, or null) is closed after the stream, also on failure. */
  DkColumnarReader(java.util.function.LongConsumer fill, AutoCloseable owner, int[] keep,
      StructType schema) {
    this.keep = keep;
    this.schema = schema;
    this.owner = owner;
    DkNative.ensureLoaded();
    BufferAllocator a = new RootAllocator();
    ArrowArrayStream s = null;
    try {
      s = ArrowArrayStream.allocateNew(a);
      fill.accept(s.memoryAddress());
      this.reader = Data.importArrayStream(a, s);
    } catch (RuntimeException | Error e) {
      if (s != null) s.close();
      a.close();
      closeOwner();
      throw e;
    }
    this.allocator = a;
    this.stream = s;
  }

  private void closeOwner() {
    if (owner == null) return;
    try {
      owner.close();
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }

  private static final java.util.regex.Pattern CDATA =
      java.util.regex.Pattern.compile("errno=(\\d+), message=(.*)\\}\\s*$", java.util.regex.Pattern.DOTALL);

  /** The stream's C errors arrive as IOException("[errno N] ...message=..."): give them
   *  dk's error classes back (EIO carries corrupt files and I/O failures). */
  static DkException mapStreamError(IOException e) {
    String m = String.valueOf(e.getMessage());
    java.util.regex.Matcher mm = CDATA.matcher(m);
    int errno = mm.find() ? Integer.parseInt(mm.group(1)) : 5;
    String msg = mm.find(0) ? mm.group(2) : m;
    DkException.ErrorClass c;
    int status;
    switch (errno) {
      case 95: c = DkException.ErrorClass.DK_UNSUPPORTED_FEATURE; status = DkException.UNSUPPORTED; break;
      case 22: c = DkException.ErrorClass.DK_INVALID_ARGUMENT; status = DkException.INVALID; break;
      case 12: c = DkException.ErrorClass.DK_INTERNAL; status = 1; break;
      default:
        boolean corrupt = msg.contains("corrupt");
        c = corrupt ? DkException.ErrorClass.DK_CORRUPT_TABLE : DkException.ErrorClass.DK_IO_ERROR;
        status = corrupt ? DkException.CORRUPT : DkException.IO;
    }
    DkException d = new DkException(c, status, msg);
    d.initCause(e);
    return d;
  }

  @Override public boolean next() throws IOException {
    boolean more;
    try {
      more = reader.loadNextBatch();
    } catch (IOException e) {
      throw mapStreamError(e);
    }
    if (!more) return false;
    VectorSchemaRoot root = reader.getVectorSchemaRoot();
    List<FieldVector> vs = root.getFieldVectors();
    ColumnVector[] cols = new ColumnVector[keep == null ? vs.size() : keep.length];
    for (int i = 0; i < cols.length; i++) {
      FieldVector v = vs.get(keep == null ? i : keep[i]);
      if (v.getName().equals(DkTable.METADATA)) cols[i] = new MetadataVector(v);
      else if (schema != null && i < schema.fields().length)
        cols[i] = DkVector.wrap(v, schema.fields()[i].dataType());
      else cols[i] = new ArrowColumnVector(v);
    }
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
      try {
        stream.close();
        allocator.close();
      } finally {
        closeOwner();
      }
    }
  }

  /** `_metadata` struct whose file_path child reads as Spark writes file URIs ("file:/p",
   *  Hadoop Path.toUri form) instead of libdk's "file:///p"; everything else is zero-copy. */
  static final class MetadataVector extends ArrowColumnVector {
    private final ArrowColumnVector[] children;

    MetadataVector(FieldVector v) {
      super(v);
      List<FieldVector> kids = v.getChildrenFromFields();
      children = new ArrowColumnVector[kids.size()];
      for (int i = 0; i < children.length; i++) {
        FieldVector k = kids.get(i);
        children[i] = k.getName().equals("file_path") ? new FilePathVector(k) : super.getChild(i);
      }
    }

    @Override public ArrowColumnVector getChild(int ordinal) { return children[ordinal]; }
  }

  static final class FilePathVector extends ArrowColumnVector {
    private static final UTF8String FILE = UTF8String.fromString("file:");
    private static final UTF8String FILE3 = UTF8String.fromString("file:///");

    FilePathVector(FieldVector v) { super(v); }

    @Override public UTF8String getUTF8String(int rowId) {
      UTF8String s = super.getUTF8String(rowId);
      if (s == null || !s.startsWith(FILE3)) return s;
      return UTF8String.concat(FILE, s.substring(7, s.numChars()));
    }
  }
}
