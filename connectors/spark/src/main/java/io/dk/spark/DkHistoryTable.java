package io.dk.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * DESCRIBE HISTORY of a dk table as a metadata table: {@code SELECT * FROM
 * dk.`/path/to/table`.history} lists its commits newest first with delta-spark's DESCRIBE
 * HISTORY columns (version, timestamp, userId, userName, operation, operationParameters, job,
 * notebook, clusterId, readVersion, isolationLevel, isBlindAppend, operationMetrics,
 * userMetadata, engineInfo), from libdk's history module (dk_history_open: the commit times
 * delta-spark shows). A LocalScan: the rows are made on the driver, one per commit.
 */
final class DkHistoryTable implements SupportsRead {
  static final String NAME = "history";

  static final StructType SCHEMA = new StructType()
      .add("version", DataTypes.LongType)
      .add("timestamp", DataTypes.TimestampType)
      .add("userId", DataTypes.StringType)
      .add("userName", DataTypes.StringType)
      .add("operation", DataTypes.StringType)
      .add("operationParameters",
          DataTypes.createMapType(DataTypes.StringType, DataTypes.StringType, true))
      .add("job", new StructType()
          .add("jobId", DataTypes.StringType).add("jobName", DataTypes.StringType)
          .add("jobRunId", DataTypes.StringType).add("runId", DataTypes.StringType)
          .add("jobOwnerId", DataTypes.StringType).add("triggerType", DataTypes.StringType))
      .add("notebook", new StructType().add("notebookId", DataTypes.StringType))
      .add("clusterId", DataTypes.StringType)
      .add("readVersion", DataTypes.LongType)
      .add("isolationLevel", DataTypes.StringType)
      .add("isBlindAppend", DataTypes.BooleanType)
      .add("operationMetrics",
          DataTypes.createMapType(DataTypes.StringType, DataTypes.StringType, true))
      .add("userMetadata", DataTypes.StringType)
      .add("engineInfo", DataTypes.StringType);

  private static final ObjectMapper JSON = new ObjectMapper();

  private final String path;

  DkHistoryTable(String path) { this.path = path; }

  @Override public String name() { return "dk.`" + path + "`." + NAME; }

  @Override public StructType schema() { return SCHEMA; }

  @Override public Set<TableCapability> capabilities() { return EnumSet.of(TableCapability.BATCH_READ); }

  /** A LIMIT directly over the table (no filter between) lists the newest n commits with the
   *  times DESCRIBE HISTORY LIMIT n shows (dk_history_open with a limit: dk/history.h). */
  @Override public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new Builder();
  }

  private final class Builder implements ScanBuilder, SupportsPushDownLimit {
    private int limit = -1;
    @Override public boolean pushLimit(int n) {
      limit = n;
      return true;
    }
    @Override public Scan build() { return new HistoryScan(rows(limit)); }
  }

  private static final class HistoryScan implements LocalScan {
    private final InternalRow[] rows;
    HistoryScan(InternalRow[] rows) { this.rows = rows; }
    @Override public InternalRow[] rows() { return rows; }
    @Override public StructType readSchema() { return SCHEMA; }
    @Override public String description() { return "dk history"; }
  }

  private InternalRow[] rows(int limit) {
    DkNative.ensureLoaded();
    if (limit == 0) return new InternalRow[0];
    String[] h = DkNative.tableHistory(path, DkStorageOptions.resolve(path, null), limit);
    InternalRow[] out = new InternalRow[h.length / 3];
    for (int i = 0; i < out.length; i++) {
      JsonNode ci;
      try {
        ci = JSON.readTree(h[3 * i + 2]);
      } catch (java.io.IOException e) {
        throw new DkException(DkException.ErrorClass.DK_CORRUPT_TABLE, DkException.CORRUPT,
            path + ": commitInfo of version " + h[3 * i] + " is not JSON");
      }
      JsonNode job = ci.get("job"), nb = ci.get("notebook");
      out[i] = new GenericInternalRow(new Object[] {
          Long.parseLong(h[3 * i]),
          Long.parseLong(h[3 * i + 1]) * 1000L,
          str(ci, "userId"), str(ci, "userName"), str(ci, "operation"),
          map(ci.get("operationParameters")),
          job == null || job.isNull() ? null : new GenericInternalRow(new Object[] {
              str(job, "jobId"), str(job, "jobName"), str(job, "jobRunId"), str(job, "runId"),
              str(job, "jobOwnerId"), str(job, "triggerType")}),
          nb == null || nb.isNull() ? null : new GenericInternalRow(new Object[] {str(nb, "notebookId")}),
          str(ci, "clusterId"),
          ci.hasNonNull("readVersion") ? ci.get("readVersion").asLong() : null,
          str(ci, "isolationLevel"),
          ci.hasNonNull("isBlindAppend") ? ci.get("isBlindAppend").asBoolean() : null,
          map(ci.get("operationMetrics")),
          str(ci, "userMetadata"), str(ci, "engineInfo")});
    }
    return out;
  }

  /** A JSON value as delta-spark reads it into a String: text as is, others as JSON text. */
  private static UTF8String text(JsonNode v) {
    if (v == null || v.isNull()) return null;
    return UTF8String.fromString(v.isValueNode() ? v.asText() : v.toString());
  }

  private static UTF8String str(JsonNode o, String key) { return text(o.get(key)); }

  private static ArrayBasedMapData map(JsonNode o) {
    if (o == null || !o.isObject()) return null;
    List<Object> k = new ArrayList<>(), v = new ArrayList<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      k.add(UTF8String.fromString(e.getKey()));
      v.add(text(e.getValue()));
    }
    return new ArrayBasedMapData(new GenericArrayData(k.toArray()), new GenericArrayData(v.toArray()));
  }
}
