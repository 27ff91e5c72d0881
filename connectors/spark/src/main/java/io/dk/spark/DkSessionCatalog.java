package io.dk.spark;

import java.util.Map;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.DelegatingCatalogExtension;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The session catalog extension: with {@code spark.sql.catalog.spark_catalog=
 * io.dk.spark.DkSessionCatalog}, {@code CREATE TABLE t (...) USING dk [PARTITIONED BY (...)]
 * LOCATION '/path'} registers t in the session catalog and creates the Delta table at its
 * location through libdk (one commit, as DkCatalog's CREATE TABLE); reads, writes, DELETE /
 * UPDATE / MERGE and ALTER TABLE of t are those of {@code dk.`/path`} (DkTable,
 * {@link DkCatalog#alterPath}); DROP TABLE removes the catalog entry and keeps the files (an
 * external table, as delta-spark's for USING delta LOCATION). Tables of other providers are
 * the delegate's. Managed (LOCATION-less) dk tables are refused.
 */
public class DkSessionCatalog extends DelegatingCatalogExtension {

  /** The dk table location of a session-catalog table, or null when it is not USING dk. */
  private static String dkLocation(Table t) {
    Map<String, String> p = t.properties();
    if (!"dk".equalsIgnoreCase(p.get(TableCatalog.PROP_PROVIDER))) return null;
    return localPath(p.get(TableCatalog.PROP_LOCATION));
  }

  private static String localPath(String loc) {
    if (loc == null) return null;
    if (loc.startsWith("file:")) return java.net.URI.create(loc).getPath();
    return loc;
  }

  @Override public Table loadTable(Identifier ident) throws NoSuchTableException {
    Table t = super.loadTable(ident);
    String loc = dkLocation(t);
    if (loc == null) return t;
    return NativeSnapshot.exists(loc) ? new DkTable(NativeSnapshot.latest(loc))
        : DkTable.absent(loc, t.schema(), t.partitioning(), CaseInsensitiveStringMap.empty());
  }

  @Override public Table createTable(Identifier ident, Column[] columns, Transform[] partitions,
      Map<String, String> properties) throws TableAlreadyExistsException, NoSuchNamespaceException {
    if (!"dk".equalsIgnoreCase(properties.get(TableCatalog.PROP_PROVIDER)))
      return super.createTable(ident, columns, partitions, properties);
    String loc = localPath(properties.get(TableCatalog.PROP_LOCATION));
    if (loc == null)
      throw new DkException(DkException.ErrorClass.DK_UNSUPPORTED_FEATURE, DkException.UNSUPPORTED,
          "USING dk tables of the session catalog need a LOCATION (managed dk tables are not "
              + "supported)");
    StructType schema = CatalogV2Util.v2ColumnsToStructType(columns);
    if (NativeSnapshot.exists(loc))
      throw new TableAlreadyExistsException(ident);
    new DkStagedTable(loc, null, schema, partitions, properties, "CREATE TABLE")
        .commitStagedChanges();
    super.createTable(ident, columns, partitions, properties);
    try {
      return loadTable(ident);
    } catch (NoSuchTableException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override public Table alterTable(Identifier ident, TableChange... changes)
      throws NoSuchTableException {
    String loc = dkLocation(super.loadTable(ident));
    if (loc == null) return super.alterTable(ident, changes);
    DkCatalog.alterPath(loc, changes);
    return loadTable(ident);
  }
}
