package io.dk.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.SparkSession;

/**
 * Storage options of object-store tables ({@code s3://}, {@code s3a://}) for libdk, in
 * delta-rs's names (dk_s3_options_set), taken from the Hadoop S3A settings a Spark user
 * already has: {@code spark.hadoop.fs.s3a.*} in the session conf (set at runtime, or in the
 * SparkConf / spark-defaults it falls back to; the connector compiles without Hadoop's
 * classes, so core-site.xml is not read). What they do not give comes, inside libdk, from the
 * AWS_* environment and ~/.aws files.
 * The driver computes them once per snapshot; they travel to executors in each
 * {@link DkInputPartition}, as Spark ships its own Hadoop configuration to tasks.
 */
final class DkStorageOptions {
  private DkStorageOptions() {}

  static boolean isObjectStore(String path) {
    String p = path.toLowerCase(Locale.ROOT);
    return p.startsWith("s3://") || p.startsWith("s3a://");
  }

  private static String get(SparkSession s, String key) {
    String v = s.conf().get("spark.hadoop." + key, null);
    return v == null || v.isEmpty() ? null : v.trim();
  }

  /** key, value, key, value... for libdk (empty without an active session). */
  static String[] fromSession() {
    SparkSession s = SparkSession.getActiveSession().isDefined()
        ? SparkSession.getActiveSession().get() : null;
    List<String> kv = new ArrayList<>();
    if (s == null) return new String[0];
    String[][] direct = {
        {"fs.s3a.access.key", "aws_access_key_id"},
        {"fs.s3a.secret.key", "aws_secret_access_key"},
        {"fs.s3a.session.token", "aws_session_token"},
        {"fs.s3a.endpoint.region", "aws_region"},
    };
    for (String[] d : direct) {
      String v = get(s, d[0]);
      if (v != null) { kv.add(d[1]); kv.add(v); }
    }
    String ep = get(s, "fs.s3a.endpoint");
    if (ep != null) {
      if (!ep.contains("://"))
        ep = ("false".equalsIgnoreCase(get(s, "fs.s3a.connection.ssl.enabled")) ? "http://"
                                                                               : "https://") + ep;
      kv.add("aws_endpoint_url");
      kv.add(ep);
      if (ep.toLowerCase(Locale.ROOT).startsWith("http://")) { kv.add("aws_allow_http"); kv.add("true"); }
    }
    String ps = get(s, "fs.s3a.path.style.access");
    if (ps != null) {
      kv.add("aws_virtual_hosted_style_request");
      kv.add(Boolean.parseBoolean(ps) ? "false" : "true");
    }
    return kv.toArray(new String[0]);
  }
}
