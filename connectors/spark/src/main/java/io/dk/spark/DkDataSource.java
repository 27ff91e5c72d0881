package io.dk.spark;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeParseException;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("dk").load(path)} with options {@code versionAsOf} and
 * {@code timestampAsOf} (interpreted in spark.sql.session.timeZone when it has no zone) and
 * {@code confinePaths} (refuse data, DV and sidecar files outside the table root; default
 * off, as delta-spark; the session default is {@code spark.dk.confinePaths});
 * {@code readChangeFeed} reads the change data feed (DkChangesTable); readStream reads the
 * table as a stream (DkMicroBatchStream); and
 * {@code df.write.format("dk").mode("append" | "overwrite").save(path)} (DkWriteBuilder): the
 * source accepts external metadata, so a write to a local path with no table yet gets a table
 * that the write creates, with the data's schema and partitionBy columns.
 */
public class DkDataSource implements TableProvider, DataSourceRegister {
  private DkTable table;

  @Override public String shortName() { return "dk"; }

  @Override public StructType inferSchema(CaseInsensitiveStringMap options) {
    return DkStreamOptions.changeDataFeed(options) ? new DkChangesTable(load(options)).schema()
                                                   : load(options).schema();
  }

  /** A table's partitioning; none for a path with no table yet, which a write with the data's
   *  schema is about to create (a streaming query's sink: Spark asks before getTable). */
  @Override public Transform[] inferPartitioning(CaseInsensitiveStringMap options) {
    if (!DkStreamOptions.changeDataFeed(options) && absent(options)) return new Transform[0];
    return load(options).partitioning();
  }

  /** No table at the options' path (libdk asks the path's storage), and no time travel. */
  private static boolean absent(CaseInsensitiveStringMap o) {
    String path = o.get("path");
    return path != null && !o.containsKey("versionAsOf") && !o.containsKey("timestampAsOf")
        && !NativeSnapshot.exists(path, o);
  }

  @Override public boolean supportsExternalMetadata() { return true; }

  @Override public Table getTable(StructType schema, Transform[] partitioning,
      Map<String, String> properties) {
    CaseInsensitiveStringMap o = new CaseInsensitiveStringMap(properties);
    if (DkStreamOptions.changeDataFeed(o)) return new DkChangesTable(load(o));
    // no table at the path (libdk asks the path's storage): a write creates it there
    if (absent(o)) return DkTable.absent(o.get("path"), schema, partitioning, o);
    return load(o);
  }

  private synchronized DkTable load(CaseInsensitiveStringMap o) {
    if (table != null) return table;
    String path = o.get("path");
    if (path == null) {
      throw new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, 2,
          "format(\"dk\") needs a path: spark.read.format(\"dk\").load(\"/path/to/table\")");
    }
    long version = -1;
    Long ts = null;
    if (o.containsKey("versionAsOf")) {
      try {
        version = Long.parseLong(o.get("versionAsOf").trim());
      } catch (NumberFormatException e) {
        throw new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, 2,
            "versionAsOf must be a non-negative integer, got '" + o.get("versionAsOf") + "'");
      }
      if (version < 0)
        throw new DkException(DkException.ErrorClass.DK_VERSION_NOT_FOUND, 4,
            "version " + version + " does not exist in " + path);
    }
    if (o.containsKey("timestampAsOf")) {
      if (version >= 0)
        throw new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, 2,
            "give either versionAsOf or timestampAsOf, not both");
      ts = parseTimestampMs(o.get("timestampAsOf"));
    }
    boolean pinned = version >= 0 || ts != null;
    table = new DkTable(pinned ? NativeSnapshot.open(path, version, ts, o)
                               : NativeSnapshot.latest(path, o), pinned, o);
    return table;
  }

  static ZoneId sessionZone() {
    SparkSession s = SparkSession.getActiveSession().getOrElse(() -> null);
    String z = s == null ? null : s.conf().get("spark.sql.session.timeZone", null);
    return z == null ? ZoneId.systemDefault() : ZoneId.of(z);
  }

  /** "2024-01-01", "2024-01-01 10:00:00[.ffffff]", ISO with T and optional offset/Z. */
  static long parseTimestampMs(String text) {
    String t = text.trim();
    ZoneId zone = sessionZone();
    try {
      if (t.length() == 10) return LocalDate.parse(t).atStartOfDay(zone).toInstant().toEpochMilli();
      String iso = t.replace(' ', 'T');
      try {
        return OffsetDateTime.parse(iso).toInstant().toEpochMilli();
      } catch (DateTimeParseException e) {
        try {
          return Instant.parse(iso).toEpochMilli();
        } catch (DateTimeParseException e2) {
          return LocalDateTime.parse(iso).atZone(zone).toInstant().toEpochMilli();
        }
      }
    } catch (DateTimeParseException e) {
      throw new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, 2,
          "timestampAsOf: cannot parse '" + text + "' as a timestamp");
    }
  }
}
