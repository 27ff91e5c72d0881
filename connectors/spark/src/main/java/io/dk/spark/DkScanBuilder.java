package io.dk.spark;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Pushdown: V2 predicates (partition-only predicates are exact; data predicates are pushed
 * for file skipping and row filtering in libdk and still returned to Spark as post-scan),
 * required columns (with nested struct pruning), and LIMIT (when no post-scan filter).
 */
public class DkScanBuilder
    implements SupportsPushDownV2Filters, SupportsPushDownRequiredColumns, SupportsPushDownLimit {
  private final DkTable table;
  private final CaseInsensitiveStringMap options;
  private Predicate[] pushed = new Predicate[0];
  private final List<String> pushedText = new ArrayList<>();
  private boolean hasPostScan;
  private StructType required;
  private long limit = -1;

  DkScanBuilder(DkTable table, CaseInsensitiveStringMap options) {
    this.table = table;
    this.options = options;
  }

  @Override public Predicate[] pushPredicates(Predicate[] predicates) {
    Set<String> parts = new HashSet<>();
    for (String p : table.partitionColumnNames()) parts.add(p.toLowerCase(Locale.ROOT));
    List<Predicate> accepted = new ArrayList<>();
    List<Predicate> postScan = new ArrayList<>();
    for (Predicate p : predicates) {
      Set<String> refs = new HashSet<>();
      String text = dkText(table, p, refs);
      if (text == null) {
        postScan.add(p);
        continue;
      }
      accepted.add(p);
      pushedText.add(text);
      boolean partitionOnly = !refs.isEmpty();
      for (String r : refs) partitionOnly &= parts.contains(r.toLowerCase(Locale.ROOT));
      if (!partitionOnly) postScan.add(p);
    }
    pushed = accepted.toArray(new Predicate[0]);
    hasPostScan = !postScan.isEmpty();
    return postScan.toArray(new Predicate[0]);
  }

  /** p as dk predicate text that libdk evaluates as Spark does on this table, or null; the
   *  top-level columns it references are added to refs. */
  static String dkText(DkTable table, Predicate p, Set<String> refs) {
    String text = FilterTranslator.translate(p, refs);
    if (text != null && table.snapshot().bindCheck(text) != null) return null;
    // collated strings compare by their collation, variants are not comparable: Spark only
    for (String r : refs) {
      StructField f = text == null ? null : SparkTypes.find(table.schema(), r);
      if (f != null && (SparkTypes.isCollated(f.dataType()) || SparkTypes.hasVariant(f.dataType())))
        return null;
    }
    return text;
  }

  @Override public Predicate[] pushedPredicates() { return pushed; }

  @Override public void pruneColumns(StructType requiredSchema) { this.required = requiredSchema; }

  @Override public boolean pushLimit(int n) {
    if (hasPostScan) return false;
    limit = n;
    return true;
  }

  @Override public Scan build() {
    List<String> cols = null;
    int meta = 0;
    if (required != null) {
      cols = new ArrayList<>();
      for (StructField f : required.fields()) {
        if (f.name().equals(DkTable.METADATA) && f.dataType() instanceof StructType) {
          for (StructField m : ((StructType) f.dataType()).fields())
            meta |= DkTable.metadataBit(m.name());
          continue;
        }
        StructField full = find(table.schema(), f.name());
        if (full != null && !f.name().contains(".")) addPaths(cols, f.name(), f, full);
        else cols.add(f.name());
      }
    }
    String filter = pushedText.isEmpty() ? null : String.join(" AND ", pushedText);
    return new DkScan(table, cols == null ? null : cols.toArray(new String[0]), filter,
        pushedText, limit, meta, options);
  }

  private static StructField find(StructType t, String name) {
    for (StructField f : t.fields()) if (f.name().equalsIgnoreCase(name)) return f;
    return null;
  }

  /** Nested pruning: a struct that Spark requested with fewer fields becomes dotted paths. */
  private static void addPaths(List<String> out, String path, StructField req, StructField full) {
    if (req.dataType() instanceof StructType && full.dataType() instanceof StructType) {
      StructType r = (StructType) req.dataType(), f = (StructType) full.dataType();
      if (r.fields().length < f.fields().length) {
        boolean ok = r.fields().length > 0;
        for (StructField c : r.fields()) ok &= !c.name().contains(".") && find(f, c.name()) != null;
        if (ok) {
          for (StructField c : r.fields()) addPaths(out, path + "." + c.name(), c, find(f, c.name()));
          return;
        }
      }
    }
    out.add(path);
  }
}
