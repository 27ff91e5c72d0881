package io.dk.spark;

import java.io.File;
import java.util.Map;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Path-based catalog: with {@code spark.sql.catalog.dk=io.dk.spark.DkCatalog},
 * {@code SELECT ... FROM dk.`/path/to/table` [VERSION AS OF n | TIMESTAMP AS OF ts]}, INSERT /
 * REPLACE WHERE / INSERT OVERWRITE into {@code dk.`/path`}, and DDL on paths: CREATE TABLE,
 * CTAS, REPLACE TABLE [AS SELECT], CREATE OR REPLACE TABLE [AS SELECT], with PARTITIONED BY,
 * TBLPROPERTIES and COMMENT, each one atomic commit (a StagingTableCatalog: DkStagedTable);
 * DELETE / UPDATE / MERGE on its tables (DkTable). Whether a table exists is libdk's answer
 * through the path's storage (local, s3://, s3a://). With the session conf
 * {@code spark.dk.confinePaths=true} its tables refuse files outside their roots.
 * ALTER / DROP / RENAME are not supported yet.
 */
public class DkCatalog implements StagingTableCatalog {
  private String name = "dk";

  @Override public void initialize(String n, CaseInsensitiveStringMap options) { this.name = n; }

  @Override public String name() { return name; }

  private static String path(Identifier ident) throws NoSuchTableException {
    String p = ident.name();
    if (ident.namespace().length != 0
        || !(new File(p).isAbsolute() || DkStorageOptions.isObjectStore(p)))
      throw new NoSuchTableException(ident);
    return p;
  }

  private static Table open(Identifier ident, long version, Long tsMs) throws NoSuchTableException {
    String p = path(ident);
    try {
      boolean pinned = version >= 0 || tsMs != null;
      return new DkTable(pinned ? NativeSnapshot.open(p, version, tsMs, null)
                                : NativeSnapshot.latest(p, null),
          pinned, CaseInsensitiveStringMap.empty());
    } catch (DkException e) {
      if (e.getErrorClass() == DkException.ErrorClass.DK_TABLE_NOT_FOUND) {
        NoSuchTableException n = new NoSuchTableException(ident);
        try {
          n.initCause(e);
        } catch (IllegalStateException already) {
          n.addSuppressed(e); // Spark 4.2 sets the cause (none) in the constructor
        }
        throw n;
      }
      throw e;
    }
  }

  @Override public Table loadTable(Identifier ident) throws NoSuchTableException {
    return open(ident, -1, null);
  }

  @Override public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    long v;
    try {
      v = Long.parseLong(version.trim());
    } catch (NumberFormatException e) {
      throw new DkException(DkException.ErrorClass.DK_INVALID_ARGUMENT, 2,
          "VERSION AS OF needs an integer, got '" + version + "'");
    }
    if (v < 0)
      throw new DkException(DkException.ErrorClass.DK_VERSION_NOT_FOUND, 4,
          "version " + v + " does not exist");
    return open(ident, v, null);
  }

  /** timestamp: microseconds since the epoch (Spark's TIMESTAMP AS OF). */
  @Override public Table loadTable(Identifier ident, long timestamp) throws NoSuchTableException {
    return open(ident, -1, Math.floorDiv(timestamp, 1000L));
  }

  @Override public boolean tableExists(Identifier ident) {
    try {
      return NativeSnapshot.exists(path(ident));
    } catch (NoSuchTableException e) {
      return false;
    }
  }

  @Override public Identifier[] listTables(String[] namespace) { return new Identifier[0]; }

  private static NativeSnapshot existing(Identifier ident) throws NoSuchTableException {
    String p = path(ident);
    return NativeSnapshot.exists(p) ? NativeSnapshot.latest(p, null) : null;
  }

  @SuppressWarnings("deprecation")
  @Override public Table createTable(Identifier ident, StructType schema, Transform[] partitions,
      Map<String, String> properties) throws TableAlreadyExistsException, NoSuchNamespaceException {
    DkStagedTable t = stageCreate(ident, schema, partitions, properties);
    t.commitStagedChanges();
    try {
      return loadTable(ident);
    } catch (NoSuchTableException e) {
      throw new IllegalStateException(e);
    }
  }

  @SuppressWarnings("deprecation")
  @Override public DkStagedTable stageCreate(Identifier ident, StructType schema,
      Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    NativeSnapshot s;
    try {
      s = existing(ident);
    } catch (NoSuchTableException e) {
      throw new NoSuchNamespaceException(ident.namespace());
    }
    if (s != null) {
      s.close();
      throw new TableAlreadyExistsException(ident);
    }
    return new DkStagedTable(ident.name(), null, schema, partitions, properties, "CREATE TABLE");
  }

  @SuppressWarnings("deprecation")
  @Override public DkStagedTable stageReplace(Identifier ident, StructType schema,
      Transform[] partitions, Map<String, String> properties)
      throws NoSuchNamespaceException, NoSuchTableException {
    NativeSnapshot s = existing(ident);
    if (s == null) throw new NoSuchTableException(ident);
    return new DkStagedTable(ident.name(), s, schema, partitions, properties, "REPLACE TABLE");
  }

  @SuppressWarnings("deprecation")
  @Override public DkStagedTable stageCreateOrReplace(Identifier ident, StructType schema,
      Transform[] partitions, Map<String, String> properties) throws NoSuchNamespaceException {
    NativeSnapshot s;
    try {
      s = existing(ident);
    } catch (NoSuchTableException e) {
      throw new NoSuchNamespaceException(ident.namespace());
    }
    return new DkStagedTable(ident.name(), s, schema, partitions, properties,
        s == null ? "CREATE TABLE" : "CREATE OR REPLACE TABLE");
  }

  @Override public Table alterTable(Identifier ident, TableChange... changes) {
    throw new UnsupportedOperationException("dk catalog is read-only");
  }

  @Override public boolean dropTable(Identifier ident) {
    throw new UnsupportedOperationException("dk catalog is read-only");
  }

  @Override public void renameTable(Identifier from, Identifier to) {
    throw new UnsupportedOperationException("dk catalog is read-only");
  }
}
