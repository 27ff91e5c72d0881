package io.dk.spark;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The write options dk honours, with Delta's names and session-conf fallbacks:
 * mergeSchema (spark.databricks.delta.schema.autoMerge.enabled), overwriteSchema, replaceWhere,
 * partitionOverwriteMode (spark.sql.sources.partitionOverwriteMode), txnAppId / txnVersion
 * (spark.databricks.delta.write.txnAppId / txnVersion), userMetadata
 * (spark.databricks.delta.commitInfo.userMetadata), targetFileSize (bytes; else the table's
 * delta.targetFileSize, else 128 MiB), clusterByPartitionColumns (default true), and
 * {@code delta.*} options, which become the table properties of a table the write creates.
 */
final class WriteOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  final boolean mergeSchema, overwriteSchema, dynamicPartitionOverwrite, clusterByPartitionColumns;
  final String replaceWhere, userMetadata, txnAppId;
  final long txnVersion, targetFileSize;
  final Map<String, String> tableProperties = new LinkedHashMap<>();

  WriteOptions(CaseInsensitiveStringMap o) {
    mergeSchema = bool(o, "mergeSchema", conf("spark.databricks.delta.schema.autoMerge.enabled"));
    overwriteSchema = bool(o, "overwriteSchema", null);
    String pom = o.containsKey("partitionOverwriteMode") ? o.get("partitionOverwriteMode")
        : conf("spark.sql.sources.partitionOverwriteMode");
    if (pom != null && !pom.equalsIgnoreCase("static") && !pom.equalsIgnoreCase("dynamic"))
      throw invalid("partitionOverwriteMode must be STATIC or DYNAMIC, got '" + pom + "'");
    dynamicPartitionOverwrite = pom != null && pom.equalsIgnoreCase("dynamic");
    clusterByPartitionColumns = bool(o, "clusterByPartitionColumns", "true");
    String rw = o.get("replaceWhere");
    replaceWhere = rw == null || rw.trim().isEmpty() ? null : rw;
    String um = o.containsKey("userMetadata") ? o.get("userMetadata")
        : conf("spark.databricks.delta.commitInfo.userMetadata");
    userMetadata = um == null || um.isEmpty() ? null : um;
    String app = o.containsKey("txnAppId") ? o.get("txnAppId")
        : conf("spark.databricks.delta.write.txnAppId");
    String ver = o.containsKey("txnVersion") ? o.get("txnVersion")
        : conf("spark.databricks.delta.write.txnVersion");
    if ((app == null) != (ver == null))
      throw invalid("Invalid options for idempotent Dataframe writes: txnVersion and txnAppId "
          + "must be given together (DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS)");
    txnAppId = app;
    txnVersion = ver == null ? -1 : parseLong("txnVersion", ver);
    targetFileSize = o.containsKey("targetFileSize") ? parseLong("targetFileSize", o.get("targetFileSize")) : 0;
    for (Map.Entry<String, String> e : o.asCaseSensitiveMap().entrySet())
      if (e.getKey().toLowerCase(Locale.ROOT).startsWith("delta."))
        tableProperties.put(e.getKey(), e.getValue());
  }

  private static DkException invalid(String msg) {
    return new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, DkException.INVALID, msg);
  }

  private static long parseLong(String name, String v) {
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw invalid(name + " must be an integer, got '" + v + "'");
    }
  }

  private static boolean bool(CaseInsensitiveStringMap o, String key, String dflt) {
    String v = o.containsKey(key) ? o.get(key) : dflt;
    if (v == null) return false;
    if (v.equalsIgnoreCase("true")) return true;
    if (v.equalsIgnoreCase("false")) return false;
    throw invalid(key + " must be true or false, got '" + v + "'");
  }

  /** Session defaults for new tables' properties, as delta-spark applies them:
   *  spark.databricks.delta.properties.defaults.X=v gives delta.X=v. */
  static Map<String, String> tableDefaults() {
    Map<String, String> out = new LinkedHashMap<>();
    SparkSession s = SparkSession.getActiveSession().getOrElse(() -> null);
    if (s == null) return out;
    String pre = "spark.databricks.delta.properties.defaults.";
    for (Map.Entry<String, String> e
        : scala.jdk.javaapi.CollectionConverters.asJava(s.conf().getAll()).entrySet())
      if (e.getKey().startsWith(pre))
        out.put("delta." + e.getKey().substring(pre.length()), e.getValue());
    return out;
  }

  static String conf(String key) {
    SparkSession s = SparkSession.getActiveSession().getOrElse(() -> null);
    return s == null ? null : s.conf().get(key, null);
  }

  /** Whether the options ask the connector to take the data's own columns (so the table
   *  declares ACCEPT_ANY_SCHEMA and Spark does not resolve them against the table's). */
  static boolean evolvesSchema(CaseInsensitiveStringMap o) {
    return "true".equalsIgnoreCase(o.getOrDefault("mergeSchema", ""))
        || "true".equalsIgnoreCase(o.getOrDefault("overwriteSchema", ""))
        || "true".equalsIgnoreCase(conf("spark.databricks.delta.schema.autoMerge.enabled"));
  }
}
