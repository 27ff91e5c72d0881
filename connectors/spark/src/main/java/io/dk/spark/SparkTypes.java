package io.dk.spark;

import java.util.Locale;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.VariantType;

/**
 * Spark types the Arrow schema cannot express, taken from the table's Delta schemaString
 * (parsed by Spark's own DataType.fromJson, as delta-spark does): VariantType (libdk returns
 * a variant as struct&lt;metadata: binary, value: binary&gt;) and collated StringType (the
 * field's __COLLATIONS metadata; the data is plain UTF-8 either way).
 */
final class SparkTypes {
  private SparkTypes() {}

  /** The Delta schema as Spark reads it, or null (absent or not parseable here). */
  static StructType deltaSchema(String schemaString) {
    if (schemaString == null) return null;
    try {
      DataType t = DataType.fromJson(schemaString);
      return t instanceof StructType ? (StructType) t : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** `a` (derived from Arrow) with variant and collated string types taken from `d`. */
  static DataType overlay(DataType a, DataType d) {
    if (d == null) return a;
    if (d instanceof VariantType && a instanceof StructType) return d;
    if (d instanceof StringType && a instanceof StringType) return d;
    if (a instanceof StructType && d instanceof StructType)
      return overlay((StructType) a, (StructType) d);
    if (a instanceof ArrayType && d instanceof ArrayType) {
      ArrayType x = (ArrayType) a;
      return new ArrayType(overlay(x.elementType(), ((ArrayType) d).elementType()), x.containsNull());
    }
    if (a instanceof MapType && d instanceof MapType) {
      MapType x = (MapType) a, y = (MapType) d;
      return new MapType(overlay(x.keyType(), y.keyType()), overlay(x.valueType(), y.valueType()),
          x.valueContainsNull());
    }
    return a;
  }

  /** Fields matched by name (case-insensitively, as Delta column names are). */
  static StructType overlay(StructType a, StructType d) {
    if (d == null) return a;
    StructField[] out = new StructField[a.fields().length];
    for (int i = 0; i < out.length; i++) {
      StructField f = a.fields()[i];
      StructField g = find(d, f.name());
      out[i] = g == null ? f
          : new StructField(f.name(), overlay(f.dataType(), g.dataType()), f.nullable(),
              comment(f.metadata(), g.metadata()));
    }
    return new StructType(out);
  }

  /** m with the column comment of the schemaString's field metadata d (as delta-spark's read
   *  schema shows it; column-mapping metadata stays out). */
  static org.apache.spark.sql.types.Metadata comment(org.apache.spark.sql.types.Metadata m,
      org.apache.spark.sql.types.Metadata d) {
    if (!d.contains("comment") || m.contains("comment")) return m;
    return new org.apache.spark.sql.types.MetadataBuilder().withMetadata(m)
        .putString("comment", d.getString("comment")).build();
  }

  static StructField find(StructType t, String name) {
    for (StructField f : t.fields())
      if (f.name().toLowerCase(Locale.ROOT).equals(name.toLowerCase(Locale.ROOT))) return f;
    return null;
  }

  static boolean hasVariant(DataType t) {
    if (t instanceof VariantType) return true;
    if (t instanceof StructType) {
      for (StructField f : ((StructType) t).fields()) if (hasVariant(f.dataType())) return true;
      return false;
    }
    if (t instanceof ArrayType) return hasVariant(((ArrayType) t).elementType());
    if (t instanceof MapType)
      return hasVariant(((MapType) t).keyType()) || hasVariant(((MapType) t).valueType());
    return false;
  }

  /** A string type with a collation other than the default binary one. */
  static boolean isCollated(DataType t) {
    return t instanceof StringType && !t.equals(DataTypes.StringType);
  }
}
