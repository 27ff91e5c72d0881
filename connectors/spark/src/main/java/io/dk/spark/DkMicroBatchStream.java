package io.dk.spark;

import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.CompositeReadLimit;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxFiles;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.StructType;

/**
 * {@code spark.readStream.format("dk").load(path)}: a Delta table read as a stream of
 * micro-batches through libdk's dk_stream (delta-spark's DeltaSource; the Delta V2
 * connector's DeltaV2MicroBatchStream, spark-v2-connector-spec.md §7). Offsets are Delta's
 * DeltaSourceOffset JSON, so a dk stream and a format("delta") stream read each other's
 * checkpoints. Admission control: maxFilesPerTrigger (default 1000) and maxBytesPerTrigger
 * (soft), as delta-spark admits files, per commit for change data feed streams;
 * Trigger.AvailableNow fixes the end at the latest version when the query starts. The driver
 * computes offsets and plans each batch; executors plan the same batch again and read their
 * slice of its files (DkChangeSlice).
 */
final class DkMicroBatchStream
    implements MicroBatchStream, SupportsAdmissionControl, SupportsTriggerAvailableNow {

  /** A soft byte budget per batch (Spark has no such ReadLimit; delta-spark defines its own). */
  static final class ReadMaxBytes implements ReadLimit {
    final long maxBytes;
    ReadMaxBytes(long maxBytes) { this.maxBytes = maxBytes; }
    @Override public String toString() { return "MaxBytes: " + maxBytes; }
  }

  static final class DkOffset extends Offset {
    private final String json;
    DkOffset(String json) { this.json = json; }
    @Override public String json() { return json; }
  }

  private final DkStreamOptions options;
  private final StructType schema;
  private final String[] columns;
  private boolean availableNow;
  private NativeStream stream;
  private String initial;

  DkMicroBatchStream(DkStreamOptions options, StructType schema, String checkpointLocation) {
    this.options = options;
    this.schema = schema;
    this.columns = schema.fieldNames();
  }

  private synchronized NativeStream stream() {
    if (stream == null) stream = new NativeStream(options, availableNow, columns);
    return stream;
  }

  @Override public synchronized void prepareForTriggerAvailableNow() {
    availableNow = true;
    if (stream != null) {  // reopen: the end is fixed when the native stream opens
      stream.close();
      stream = null;
    }
  }

  @Override public synchronized Offset initialOffset() {
    if (initial == null) initial = stream().initialOffset();
    return new DkOffset(initial);
  }

  @Override public Offset deserializeOffset(String json) { return new DkOffset(json); }

  @Override public ReadLimit getDefaultReadLimit() {
    if (options.maxBytes > 0 && options.maxFiles > 0)
      return ReadLimit.compositeLimit(new ReadLimit[] {new ReadMaxBytes(options.maxBytes),
          ReadLimit.maxFiles((int) options.maxFiles)});
    if (options.maxBytes > 0) return new ReadMaxBytes(options.maxBytes);
    return ReadLimit.maxFiles(options.maxFiles > 0 ? (int) options.maxFiles : 1000);
  }

  /** {max files, max bytes} for dk_stream_latest_offset: 0 = the stream's own, both -1 =
   *  no limit. */
  private static long[] limits(ReadLimit limit) {
    if (limit instanceof ReadAllAvailable) return new long[] {-1, -1};
    long files = 0, bytes = 0;
    ReadLimit[] all = limit instanceof CompositeReadLimit
        ? ((CompositeReadLimit) limit).getReadLimits() : new ReadLimit[] {limit};
    for (ReadLimit l : all) {
      if (l instanceof ReadMaxFiles) files = ((ReadMaxFiles) l).maxFiles();
      else if (l instanceof ReadMaxBytes) bytes = ((ReadMaxBytes) l).maxBytes;
    }
    return new long[] {files, bytes};
  }

  @Override public Offset latestOffset() {
    throw new IllegalStateException("latestOffset(Offset, ReadLimit) should be called instead");
  }

  @Override public synchronized Offset latestOffset(Offset start, ReadLimit limit) {
    String from = start != null ? start.json() : stream().initialOffset();
    long[] l = limits(limit);
    String next = stream().latestOffset(from, l[0], l[1]);
    if (next != null) return new DkOffset(next);
    // nothing new: no batch at all before the first one, else stay where we are
    return initial != null && initial.equals(from) ? null : start;
  }

  @Override public synchronized InputPartition[] planInputPartitions(Offset start, Offset end) {
    String from = start != null ? start.json() : stream().initialOffset();
    try (NativeStream.Batch b = stream().batch(from, end.json())) {
      return DkChangeSlice.ofBatch(options, from, end.json(), b.fileSizes(), columns);
    }
  }

  @Override public PartitionReaderFactory createReaderFactory() {
    String[] out = stream().arrowSchema().getFields().stream().map(f -> f.getName())
        .toArray(String[]::new);
    return new DkChangeSlice.Factory(DkChangeSlice.keep(schema, out), schema);
  }

  @Override public void commit(Offset end) {}

  @Override public synchronized void stop() {
    if (stream != null) stream.close();
    stream = null;
  }

  @Override public String toString() { return "DkMicroBatchStream[" + options.path + "]"; }
}
