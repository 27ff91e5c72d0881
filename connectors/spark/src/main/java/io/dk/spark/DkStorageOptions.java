package io.dk.spark;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.SparkSession;

/**
 * Storage options of object-store tables ({@code s3://}, {@code s3a://}) for libdk, in
 * delta-rs's names (dk_s3_options_set), taken from the Hadoop S3A settings a Spark user
 * already has, where delta-spark (through Hadoop's S3AFileSystem) takes them. Each S3A key
 * ({@code fs.s3a.access.key}, ...) is looked up, the first hit winning, in
 * <ol>
 *   <li>the options of the read ({@code .option("fs.s3a.access.key", ...)}, as delta-spark
 *       passes {@code fs.*} read options into the Hadoop configuration of the table);</li>
 *   <li>the session conf: {@code fs.s3a.*} and {@code spark.hadoop.fs.s3a.*} (set at runtime,
 *       or in the SparkConf / spark-defaults it falls back to);</li>
 *   <li>the session's Hadoop configuration ({@code sparkContext.hadoopConfiguration}:
 *       core-site.xml and the other Hadoop resources on the classpath, and
 *       {@code spark.hadoop.*} of the SparkConf), read by reflection since the connector
 *       compiles without Hadoop's classes;</li>
 * </ol>
 * and S3A's per-bucket form {@code fs.s3a.bucket.<bucket>.<key>} comes before the plain one
 * in every source, as S3A applies it. What none of them gives comes, inside libdk, from the
 * AWS_* environment and ~/.aws files.
 * The driver computes them once per table (they are part of the snapshot cache's key, {@link
 * SnapshotCache}); they travel to executors in each {@link DkInputPartition} and {@link
 * DkStreamOptions}, as Spark ships its own Hadoop configuration to tasks.
 */
final class DkStorageOptions {
  private DkStorageOptions() {}

  static boolean isObjectStore(String path) {
    String p = path.toLowerCase(Locale.ROOT);
    return p.startsWith("s3://") || p.startsWith("s3a://");
  }

  private static String clean(String v) {
    return v == null || v.trim().isEmpty() ? null : v.trim();
  }

  /** The session's Hadoop configuration's value of key, or null (no session, no Hadoop). */
  private static String hadoop(Object conf, String key) {
    if (conf == null) return null;
    try {
      Method get = conf.getClass().getMethod("get", String.class);
      return clean((String) get.invoke(conf, key));
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private static Object hadoopConf(SparkSession s) {
    if (s == null) return null;
    try {
      Object sc = s.sparkContext();
      return sc.getClass().getMethod("hadoopConfiguration").invoke(sc);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /** One S3A setting ("access.key", ...) from the sources, in order (see the class comment). */
  private static final class Lookup {
    final Map<String, String> read;
    final SparkSession s;
    final Object conf;
    final String bucket;

    Lookup(String path, Map<String, String> read) {
      this.read = read;
      this.s = SparkSession.getActiveSession().isDefined()
          ? SparkSession.getActiveSession().get() : null;
      this.conf = hadoopConf(s);
      String rest = path.substring(path.indexOf("://") + 3);
      int slash = rest.indexOf('/');
      this.bucket = slash < 0 ? rest : rest.substring(0, slash);
    }

    private String one(String key) {
      String v = read == null ? null : clean(read.get(key));
      if (v == null && s != null) v = clean(s.conf().get(key, null));
      if (v == null && s != null) v = clean(s.conf().get("spark.hadoop." + key, null));
      if (v == null) v = hadoop(conf, key);
      return v;
    }

    String get(String suffix) {
      String v = one("fs.s3a.bucket." + bucket + "." + suffix);
      return v != null ? v : one("fs.s3a." + suffix);
    }
  }

  /** key, value, key, value... for libdk from the read's options (may be null), the session
   *  and its Hadoop configuration; null for a local path. */
  static String[] resolve(String path, Map<String, String> readOptions) {
    if (path == null || !isObjectStore(path)) return null;
    Lookup l = new Lookup(path, readOptions);
    List<String> kv = new ArrayList<>();
    String[][] direct = {
        {"access.key", "aws_access_key_id"},
        {"secret.key", "aws_secret_access_key"},
        {"session.token", "aws_session_token"},
        {"endpoint.region", "aws_region"},
    };
    for (String[] d : direct) {
      String v = l.get(d[0]);
      if (v != null) { kv.add(d[1]); kv.add(v); }
    }
    String ep = l.get("endpoint");
    if (ep != null) {
      if (!ep.contains("://"))
        ep = ("false".equalsIgnoreCase(l.get("connection.ssl.enabled")) ? "http://" : "https://") + ep;
      kv.add("aws_endpoint_url");
      kv.add(ep);
      if (ep.toLowerCase(Locale.ROOT).startsWith("http://")) { kv.add("aws_allow_http"); kv.add("true"); }
    }
    String ps = l.get("path.style.access");
    if (ps != null) {
      kv.add("aws_virtual_hosted_style_request");
      kv.add(Boolean.parseBoolean(ps) ? "false" : "true");
    }
    return kv.toArray(new String[0]);
  }
}
