package io.dk.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Files [first, first + n) of a change data feed range (bounds: resolved versions) or of a
 * stream batch (start, end] (offset JSON): the executor plans the same range or batch again
 * through libdk and reads its slice, so a slice carries no file list of its own.
 */
final class DkChangeSlice implements InputPartition {
  private static final long serialVersionUID = 1L;
  final DkStreamOptions options;
  final long[] bounds;       // change data feed: {1, start, 1, end}; null for a stream batch
  final String start, end;   // stream batch offsets
  final String[] columns;    // the native request, in libdk's output order
  final String filter;       // change data feed only (dk expression text) or null
  final long first, n;

  private DkChangeSlice(DkStreamOptions options, long[] bounds, String start, String end,
      String[] columns, String filter, long first, long n) {
    this.options = options;
    this.bounds = bounds;
    this.start = start;
    this.end = end;
    this.columns = columns;
    this.filter = filter;
    this.first = first;
    this.n = n;
  }

  /** Packs files in order into slices of about spark.sql.files.maxPartitionBytes (each file
   *  costs spark.sql.files.openCostInBytes more), as Spark packs file splits. */
  private static List<long[]> pack(long[] sizes) {
    SQLConf conf = SQLConf.get();
    long target = conf.filesMaxPartitionBytes(), cost = conf.filesOpenCostInBytes();
    List<long[]> out = new ArrayList<>();
    long first = 0, bytes = 0;
    for (int i = 0; i < sizes.length; i++) {
      long b = Math.max(sizes[i], 0) + cost;
      if (i > first && bytes + b > target) {
        out.add(new long[] {first, i - first});
        first = i;
        bytes = 0;
      }
      bytes += b;
    }
    if (sizes.length > first) out.add(new long[] {first, sizes.length - first});
    return out;
  }

  static InputPartition[] ofChanges(DkStreamOptions o, long[] resolved, long[] sizes,
      String[] columns, String filter) {
    List<long[]> p = pack(sizes);
    InputPartition[] out = new InputPartition[p.size()];
    for (int i = 0; i < out.length; i++)
      out[i] = new DkChangeSlice(o, resolved, null, null, columns, filter, p.get(i)[0],
          p.get(i)[1]);
    return out;
  }

  static InputPartition[] ofBatch(DkStreamOptions o, String start, String end, long[] sizes,
      String[] columns) {
    List<long[]> p = pack(sizes);
    InputPartition[] out = new InputPartition[p.size()];
    for (int i = 0; i < out.length; i++)
      out[i] = new DkChangeSlice(o, null, start, end, columns, null, p.get(i)[0], p.get(i)[1]);
    return out;
  }

  /** Columnar reader factory of slices (executor side). */
  static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final int[] keep;
    private final StructType schema;

    Factory(int[] keep, StructType schema) {
      this.keep = keep;
      this.schema = schema;
    }

    @Override public PartitionReader<InternalRow> createReader(InputPartition partition) {
      throw new UnsupportedOperationException("dk reads columnar batches only");
    }

    @Override public boolean supportColumnarReads(InputPartition partition) { return true; }

    @Override public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition p) {
      DkChangeSlice s = (DkChangeSlice) p;
      if (s.bounds != null) {
        NativeChanges c = new NativeChanges(s.options.path, s.options.storageOptions, s.bounds, s.columns, s.filter);
        return new DkColumnarReader(
            addr -> DkStreamNative.changesReadFiles(c.handle(), s.first, s.n, addr), c, keep,
            schema);
      }
      NativeStream ns = new NativeStream(s.options, false, s.columns);
      NativeStream.Batch b;
      try {
        b = ns.batch(s.start, s.end);
      } catch (RuntimeException e) {
        ns.close();
        throw e;
      }
      AutoCloseable owner = () -> {
        b.close();
        ns.close();
      };
      return new DkColumnarReader(
          addr -> DkStreamNative.batchReadFiles(b.handle, s.first, s.n, addr), owner, keep,
          schema);
    }
  }

  /** Spark field i -> index of the column of that name in libdk's output (`nativeNames`);
   *  null when the two orders are the same. */
  static int[] keep(StructType spark, String[] nativeNames) {
    int[] k = new int[spark.fields().length];
    boolean same = k.length == nativeNames.length;
    for (int i = 0; i < k.length; i++) {
      k[i] = -1;
      for (int j = 0; j < nativeNames.length; j++)
        if (nativeNames[j].equalsIgnoreCase(spark.fields()[i].name())) k[i] = j;
      if (k[i] < 0)
        throw new DkException(DkException.ErrorClass.DK_INTERNAL, 1,
            "libdk's output has no column " + spark.fields()[i].name());
      same &= k[i] == i;
    }
    return same ? null : k;
  }
}
