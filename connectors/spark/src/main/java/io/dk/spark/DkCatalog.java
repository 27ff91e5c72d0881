package io.dk.spark;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
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
 * DESCRIBE HISTORY is the metadata table {@code dk.`/path`.history} ({@link DkHistoryTable}).
 * ALTER TABLE ADD COLUMNS, SET / UNSET TBLPROPERTIES, RENAME COLUMN and DROP COLUMN(S) are
 * each one libdk commit (dk_table_alter, as delta-spark's AlterTable*DeltaCommand writes
 * them: {@link #alterTable}). DROP TABLE keeps the files, as delta-spark does for path tables
 * ({@link #dropTable}); RENAME TABLE is not supported.
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

  /** The path of a metadata table identifier (dk.`/path`.history), or null. */
  private static String historyPath(Identifier ident) {
    String[] ns = ident.namespace();
    if (ns.length != 1 || !DkHistoryTable.NAME.equalsIgnoreCase(ident.name())) return null;
    String p = ns[0];
    return new File(p).isAbsolute() || DkStorageOptions.isObjectStore(p) ? p : null;
  }

  @Override public Table loadTable(Identifier ident) throws NoSuchTableException {
    String h = historyPath(ident);
    if (h != null) {
      if (!NativeSnapshot.exists(h)) throw new NoSuchTableException(ident);
      return new DkHistoryTable(h);
    }
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

  /** dk_alter_kind (include/dk/txn.h). */
  private static final int SET_PROPERTIES = 1, UNSET_PROPERTIES = 2, ADD_COLUMNS = 3,
      RENAME_COLUMN = 4, DROP_COLUMNS = 5;

  /** ALTER TABLE: the changes of one kind become one libdk commit (dk_table_alter), as
   *  delta-spark's DeltaCatalog runs one AlterTable*DeltaCommand a kind; the kinds Spark's
   *  statements produce together commit in the order SET, UNSET, ADD, RENAME, DROP. */
  @Override public Table alterTable(Identifier ident, TableChange... changes)
      throws NoSuchTableException {
    String p = path(ident);
    if (!NativeSnapshot.exists(p)) throw new NoSuchTableException(ident);
    alterPath(p, changes);
    return loadTable(ident);
  }

  /** The changes to the table at path p (see {@link #alterTable}). */
  static void alterPath(String p, TableChange... changes) {
    List<String> set = new ArrayList<>(), unset = new ArrayList<>();
    List<TableChange.AddColumn> add = new ArrayList<>();
    List<TableChange.RenameColumn> rename = new ArrayList<>();
    List<TableChange.DeleteColumn> drop = new ArrayList<>();
    for (TableChange c : changes) {
      if (c instanceof TableChange.SetProperty) {
        set.add(((TableChange.SetProperty) c).property());
        set.add(((TableChange.SetProperty) c).value());
      } else if (c instanceof TableChange.RemoveProperty) {
        unset.add(((TableChange.RemoveProperty) c).property());
      } else if (c instanceof TableChange.AddColumn) {
        add.add((TableChange.AddColumn) c);
      } else if (c instanceof TableChange.RenameColumn) {
        rename.add((TableChange.RenameColumn) c);
      } else if (c instanceof TableChange.DeleteColumn) {
        drop.add((TableChange.DeleteColumn) c);
      } else {
        throw new DkException(DkException.ErrorClass.DK_UNSUPPORTED_FEATURE,
            DkException.UNSUPPORTED, "ALTER TABLE on dk tables: " + c.getClass().getSimpleName()
                + " is not supported (ADD COLUMNS, SET/UNSET TBLPROPERTIES, RENAME COLUMN and"
                + " DROP COLUMN are)");
      }
    }
    if (!set.isEmpty()) alter(p, SET_PROPERTIES, set, new ArrayList<>(), false);
    if (!unset.isEmpty()) alter(p, UNSET_PROPERTIES, unset, new ArrayList<>(), false);
    if (!add.isEmpty()) {
      List<Col> cols = new ArrayList<>();
      for (TableChange.AddColumn a : add) {
        if (a.defaultValue() != null)
          throw new DkException(DkException.ErrorClass.DK_UNSUPPORTED_FEATURE,
              DkException.UNSUPPORTED, "ALTER TABLE ADD COLUMNS: DEFAULT values are not "
                  + "supported on dk tables");
        if (!a.isNullable())
          throw new DkException(DkException.ErrorClass.DK_UNSUPPORTED_FEATURE,
              DkException.UNSUPPORTED, "[DELTA_OPERATION_NOT_ALLOWED] Operation not allowed: "
                  + "`NOT NULL in ALTER TABLE ADD COLUMNS` is not supported for Delta tables");
        String after = null;
        if (a.position() instanceof TableChange.First) after = "";
        else if (a.position() instanceof TableChange.After)
          after = ((TableChange.After) a.position()).column();
        cols.add(new Col(a.fieldNames(), a.dataType().json(), a.comment(), after, null));
      }
      alter(p, ADD_COLUMNS, new ArrayList<>(), cols, false);
    }
    for (TableChange.RenameColumn r : rename) {
      List<Col> cols = new ArrayList<>();
      cols.add(new Col(r.fieldNames(), null, null, null, r.newName()));
      alter(p, RENAME_COLUMN, new ArrayList<>(), cols, false);
    }
    if (!drop.isEmpty()) {
      List<Col> cols = new ArrayList<>();
      boolean ifExists = true;
      for (TableChange.DeleteColumn d : drop) {
        cols.add(new Col(d.fieldNames(), null, null, null, null));
        ifExists &= d.ifExists();
      }
      alter(p, DROP_COLUMNS, new ArrayList<>(), cols, ifExists);
    }
  }

  private record Col(String[] path, String typeJson, String comment, String after,
                     String newName) {}

  private static void alter(String path, int kind, List<String> props, List<Col> cols,
      boolean ifExists) {
    List<String> parts = new ArrayList<>(), info = new ArrayList<>();
    int[] lens = new int[cols.size()];
    for (int i = 0; i < lens.length; i++) {
      Col c = cols.get(i);
      lens[i] = c.path().length;
      parts.addAll(java.util.Arrays.asList(c.path()));
      info.add(c.typeJson());
      info.add(c.comment());
      info.add(c.after());
      info.add(c.newName());
    }
    try (NativeSnapshot s = NativeSnapshot.open(path, -1, null)) {
      DkNative.tableAlter(s.handle(), kind, props.toArray(new String[0]), lens,
          parts.toArray(new String[0]), info.toArray(new String[0]), ifExists, NativeTxn.ENGINE);
    }
  }

  /** DROP TABLE of a path table, as delta-spark's for delta.`/path`: a path table is external
   *  (no catalog entry), so nothing is deleted and its data stays readable; true when a table
   *  exists there (false: Spark reports TABLE_OR_VIEW_NOT_FOUND unless IF EXISTS). */
  @Override public boolean dropTable(Identifier ident) {
    try {
      return NativeSnapshot.exists(path(ident));
    } catch (NoSuchTableException e) {
      return false;
    }
  }

  @Override public void renameTable(Identifier from, Identifier to) {
    throw new UnsupportedOperationException("dk catalog is read-only");
  }
}
