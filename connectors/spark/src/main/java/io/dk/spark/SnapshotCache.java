package io.dk.spark;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The latest snapshot of each table path, kept between queries and refreshed incrementally:
 * every {@link #latest} lists only the commits after the cached version and applies them
 * (libdk's dk_snapshot_update; a new checkpoint, metadata or protocol changes and a rewritten
 * log are handled there), so a query sees every commit that finished before it started and
 * the log is not replayed from the last checkpoint per query.
 *
 * <p>One cache per JVM (a driver's sessions share it, as Delta's DeltaLog cache is shared),
 * keyed by the absolute table path (and the confinePaths option) and, for an object-store table, its storage options
 * (credentials, endpoint, region: {@link DkStorageOptions}) — the same bucket path reached
 * with other credentials or through another endpoint is another entry, never the first
 * reader's snapshot (as delta-spark keys its DeltaLog cache by path and the file-system
 * options of the read). The options enter the key as a SHA-256 digest, so no secret is kept
 * in it. Least-recently-used entries beyond {@code maxTables}
 * (system property {@code dk.snapshotCache.maxTables}, default 32; 0 disables the cache) are
 * dropped; a dropped entry's snapshot lives on in the tables that still use it. Refreshes of
 * one path are serialised; different paths refresh in parallel.
 */
public final class SnapshotCache {
  private static final int MAX_TABLES = Integer.getInteger("dk.snapshotCache.maxTables", 32);

  private static final class Entry {
    NativeSnapshot snap; // guarded by the entry
  }

  private static final Map<String, Entry> ENTRIES = new LinkedHashMap<>(16, 0.75f, true);
  private static long hits, refreshes, loads;

  private SnapshotCache() {}

  /** The cache key of a path and its storage options (null when local). */
  static String key(String path, String[] storageOptions) {
    if (storageOptions == null) return new File(path).getAbsolutePath();
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      for (String s : storageOptions) {
        md.update(s.getBytes(StandardCharsets.UTF_8));
        md.update((byte) 0);
      }
      StringBuilder b = new StringBuilder(path).append('#');
      for (byte x : md.digest()) b.append(String.format("%02x", x));
      return b.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e); // every JVM has SHA-256
    }
  }

  /** A snapshot of the table's latest version, owned by the caller; storageOptions as
   *  DkStorageOptions.resolve gives them for path (null when local). */
  static NativeSnapshot latest(String path, String[] storageOptions, boolean confinePaths) {
    if (MAX_TABLES <= 0) return NativeSnapshot.openWith(path, -1, null, storageOptions, confinePaths);
    // a confined table is a table of its own: its snapshot refuses what the other reads
    String key = key(path, storageOptions) + (confinePaths ? "\0confined" : "");
    Entry e;
    synchronized (ENTRIES) {
      e = ENTRIES.computeIfAbsent(key, k -> new Entry());
      evict();
    }
    synchronized (e) {
      NativeSnapshot old = e.snap;
      if (old == null) {
        e.snap = NativeSnapshot.openWith(path, -1, null, storageOptions, confinePaths);
        count(2);
      } else {
        e.snap = old.update();
        count(e.snap == old ? 0 : 1);
        if (e.snap != old) old.close();
      }
      return e.snap.ref();
    }
  }

  private static void evict() {
    while (ENTRIES.size() > MAX_TABLES) {
      Map.Entry<String, Entry> eldest = ENTRIES.entrySet().iterator().next();
      ENTRIES.remove(eldest.getKey());
      Entry old = eldest.getValue();
      synchronized (old) {
        if (old.snap != null) old.snap.close();
        old.snap = null;
      }
    }
  }

  private static synchronized void count(int what) {
    if (what == 0) hits++;
    else if (what == 1) refreshes++;
    else loads++;
  }

  /** {cached tables, refreshes that found nothing new, incremental refreshes, full loads}. */
  public static synchronized long[] stats() {
    int n;
    synchronized (ENTRIES) { n = ENTRIES.size(); }
    return new long[] {n, hits, refreshes, loads};
  }

  /** Drops every entry (tests). */
  public static void clear() {
    synchronized (ENTRIES) {
      for (Entry e : ENTRIES.values()) {
        synchronized (e) {
          if (e.snap != null) e.snap.close();
          e.snap = null;
        }
      }
      ENTRIES.clear();
    }
  }
}
