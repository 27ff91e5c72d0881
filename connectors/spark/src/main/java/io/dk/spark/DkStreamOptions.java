package io.dk.spark;

import java.io.Serializable;
import java.util.Locale;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The options of a streaming read or a change data feed read, checked as delta-spark's
 * DeltaOptions checks them (spark-v2-connector-spec.md §6.1, §7.1): startingVersion
 * (integer >= 0 or "latest"), startingTimestamp, endingVersion / endingTimestamp (batch change
 * data feed), maxFilesPerTrigger, maxBytesPerTrigger, ignoreDeletes, ignoreChanges
 * (ignoreFileDeletion), skipChangeCommits, failOnDataLoss, excludeRegex (a POSIX extended
 * regular expression in dk), readChangeFeed (readChangeData). Serializable: executors re-plan
 * the same batch from it.
 */
final class DkStreamOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  // dk_stream_start (include/dk/changes.h)
  static final int FROM_SNAPSHOT = 0, FROM_VERSION = 1, FROM_TIMESTAMP = 2, FROM_LATEST = 3;

  final String path;
  /** An object-store table's storage options (DkStorageOptions, resolved on the driver from
   *  the read's options and the session), null locally; executors open the table with them. */
  final String[] storageOptions;
  final boolean changeDataFeed;
  final int start;
  final long startingVersion, startingTimestampMs;
  final Long endingVersion, endingTimestampMs;
  final long maxFiles, maxBytes;  // 0: unset
  final boolean ignoreDeletes, ignoreChanges, skipChangeCommits, allowDataLoss;
  final String excludeRegex;

  private static DkException illegal(String name, String value, String why) {
    return new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, DkException.INVALID,
        "Invalid value '" + value + "' for option '" + name + "', " + why
            + " (DELTA_ILLEGAL_OPTION)");
  }

  private static boolean bool(CaseInsensitiveStringMap o, String name, boolean dflt) {
    String v = o.get(name);
    if (v == null) return dflt;
    String t = v.trim().toLowerCase(Locale.ROOT);
    if (t.equals("true")) return true;
    if (t.equals("false")) return false;
    throw illegal(name, v, "must be 'true' or 'false'");
  }

  private static long positive(CaseInsensitiveStringMap o, String name, boolean size) {
    String v = o.get(name);
    if (v == null) return 0;
    long n;
    try {
      n = size ? byteString(v.trim()) : Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw illegal(name, v, size ? "must be a size (e.g. 10g)" : "must be a positive integer");
    }
    if (n <= 0) throw illegal(name, v, "must be positive");
    return n;
  }

  /** A size as Spark's byteStringAsBytes reads it: a number with an optional binary unit
   *  (b, k/kb, m/mb, g/gb, t/tb, p/pb; no unit = bytes). */
  static long byteString(String v) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("([0-9]+)\\s*([a-z]*)")
        .matcher(v.toLowerCase(Locale.ROOT));
    if (!m.matches()) throw new NumberFormatException(v);
    String u = m.group(2);
    int shift;
    switch (u) {
      case "": case "b": shift = 0; break;
      case "k": case "kb": shift = 10; break;
      case "m": case "mb": shift = 20; break;
      case "g": case "gb": shift = 30; break;
      case "t": case "tb": shift = 40; break;
      case "p": case "pb": shift = 50; break;
      default: throw new NumberFormatException(v);
    }
    long n = Long.parseLong(m.group(1));
    if (n > (Long.MAX_VALUE >> shift)) throw new NumberFormatException(v);
    return n << shift;
  }

  private static Long version(CaseInsensitiveStringMap o, String name) {
    String v = o.get(name);
    if (v == null) return null;
    try {
      long n = Long.parseLong(v.trim());
      if (n >= 0) return n;
    } catch (NumberFormatException e) {
      // below
    }
    throw illegal(name, v, "must be a non-negative integer");
  }

  static boolean changeDataFeed(CaseInsensitiveStringMap o) {
    return bool(o, "readChangeFeed", false) || bool(o, "readChangeData", false);
  }

  DkStreamOptions(CaseInsensitiveStringMap o) {
    path = o.get("path");
    storageOptions = DkStorageOptions.resolve(path, o);
    changeDataFeed = changeDataFeed(o);
    String sv = o.get("startingVersion"), st = o.get("startingTimestamp");
    if (sv != null && st != null)
      throw new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, DkException.INVALID,
          "Please either provide 'startingVersion' or 'startingTimestamp' "
              + "(DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET)");
    if (sv != null && sv.trim().equalsIgnoreCase("latest")) {
      start = FROM_LATEST;
      startingVersion = 0;
    } else if (sv != null) {
      start = FROM_VERSION;
      startingVersion = version(o, "startingVersion");
    } else {
      start = st != null ? FROM_TIMESTAMP : FROM_SNAPSHOT;
      startingVersion = 0;
    }
    startingTimestampMs = st != null ? timestamp("startingTimestamp", st) : 0;
    if (o.containsKey("endingVersion") && o.containsKey("endingTimestamp"))
      throw new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, DkException.INVALID,
          "Please either provide 'endingVersion' or 'endingTimestamp' "
              + "(DELTA_ENDING_VERSION_AND_TIMESTAMP_BOTH_SET)");
    endingVersion = version(o, "endingVersion");
    endingTimestampMs = o.containsKey("endingTimestamp")
        ? (Long) timestamp("endingTimestamp", o.get("endingTimestamp")) : null;
    maxFiles = positive(o, "maxFilesPerTrigger", false);
    maxBytes = positive(o, "maxBytesPerTrigger", true);
    ignoreDeletes = bool(o, "ignoreDeletes", false);
    ignoreChanges = bool(o, "ignoreChanges", false) || bool(o, "ignoreFileDeletion", false);
    skipChangeCommits = bool(o, "skipChangeCommits", false);
    allowDataLoss = !bool(o, "failOnDataLoss", true);
    excludeRegex = o.get("excludeRegex");
  }

  private static long timestamp(String name, String text) {
    try {
      return DkDataSource.parseTimestampMs(text);
    } catch (DkException e) {
      throw illegal(name, text, "must be a timestamp or a date");
    }
  }

  /** The option array of DkStreamNative.streamOpen (dk_stream_options, dk_jni.c). */
  long[] nativeOptions(boolean availableNow) {
    return new long[] {start, startingVersion, startingTimestampMs, maxFiles, maxBytes,
        availableNow ? 1 : 0, ignoreDeletes ? 1 : 0, ignoreChanges ? 1 : 0,
        skipChangeCommits ? 1 : 0, allowDataLoss ? 1 : 0, changeDataFeed ? 1 : 0, 0};
  }

  /** The bounds of a batch change data feed read (DkStreamNative.changesOpen). */
  long[] changesBounds() {
    if (start == FROM_SNAPSHOT || start == FROM_LATEST)
      throw new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, DkException.INVALID,
          "No startingVersion or startingTimestamp provided for CDC read "
              + "(DELTA_NO_START_FOR_CDC_READ)");
    long[] b = new long[4];
    b[0] = start == FROM_VERSION ? 1 : 2;
    b[1] = start == FROM_VERSION ? startingVersion : startingTimestampMs;
    if (endingVersion != null) {
      b[2] = 1;
      b[3] = endingVersion;
    } else if (endingTimestampMs != null) {
      b[2] = 2;
      b[3] = endingTimestampMs;
    }
    return b;
  }
}
