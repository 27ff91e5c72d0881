package io.dk.spark;

import java.util.List;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.VariantType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A column whose Spark type contains VariantType, over libdk's Arrow vectors (zero-copy).
 * libdk returns a variant as struct&lt;metadata, value&gt;; Spark's ColumnVector.getVariant reads
 * child 0 as the value and child 1 as the metadata, and needs dataType() to be VariantType
 * (ColumnarArray.copy and friends dispatch on it). Structs, arrays and maps around variants
 * are rebuilt from the same vectors so that their elements are variant columns too.
 * Columns without variants stay plain ArrowColumnVectors.
 */
final class DkVector extends ColumnVector {
  private final ArrowColumnVector base;
  private final FieldVector vector;
  private final ColumnVector[] children;  // struct fields, or {value, metadata} for a variant
  private final ColumnVector elements;    // array
  private final ColumnVector keys, values; // map

  static ColumnVector wrap(FieldVector v, DataType t) {
    return SparkTypes.hasVariant(t) ? new DkVector(v, t) : new ArrowColumnVector(v);
  }

  private DkVector(FieldVector v, DataType t) {
    super(t);
    this.base = new ArrowColumnVector(v);
    this.vector = v;
    ColumnVector[] ch = null;
    ColumnVector el = null, k = null, val = null;
    List<FieldVector> kids = v.getChildrenFromFields();
    if (t instanceof VariantType) {
      ch = new ColumnVector[] {new ArrowColumnVector(child(kids, "value")),
                               new ArrowColumnVector(child(kids, "metadata"))};
    } else if (t instanceof StructType) {
      StructField[] f = ((StructType) t).fields();
      if (kids.size() != f.length)
        throw new IllegalStateException("dk: struct " + v.getName() + " has " + kids.size()
            + " children, Spark type " + f.length);
      ch = new ColumnVector[f.length];
      for (int i = 0; i < f.length; i++) ch[i] = wrap(kids.get(i), f[i].dataType());
    } else if (t instanceof MapType && v instanceof MapVector) {
      List<FieldVector> kv = ((MapVector) v).getDataVector().getChildrenFromFields();
      k = wrap(kv.get(0), ((MapType) t).keyType());
      val = wrap(kv.get(1), ((MapType) t).valueType());
    } else if (t instanceof ArrayType && v instanceof ListVector) {
      el = wrap(((ListVector) v).getDataVector(), ((ArrayType) t).elementType());
    } else {
      throw new IllegalStateException("dk: cannot read " + v.getField() + " as " + t);
    }
    this.children = ch;
    this.elements = el;
    this.keys = k;
    this.values = val;
  }

  private static FieldVector child(List<FieldVector> kids, String name) {
    for (FieldVector c : kids) if (c.getName().equals(name)) return c;
    throw new IllegalStateException("dk: variant column without a `" + name + "` field");
  }

  @Override public void close() { base.close(); }
  @Override public boolean hasNull() { return base.hasNull(); }
  @Override public int numNulls() { return base.numNulls(); }
  @Override public boolean isNullAt(int rowId) { return base.isNullAt(rowId); }
  @Override public boolean getBoolean(int rowId) { return base.getBoolean(rowId); }
  @Override public byte getByte(int rowId) { return base.getByte(rowId); }
  @Override public short getShort(int rowId) { return base.getShort(rowId); }
  @Override public int getInt(int rowId) { return base.getInt(rowId); }
  @Override public long getLong(int rowId) { return base.getLong(rowId); }
  @Override public float getFloat(int rowId) { return base.getFloat(rowId); }
  @Override public double getDouble(int rowId) { return base.getDouble(rowId); }
  @Override public Decimal getDecimal(int rowId, int p, int s) { return base.getDecimal(rowId, p, s); }
  @Override public UTF8String getUTF8String(int rowId) { return base.getUTF8String(rowId); }
  @Override public byte[] getBinary(int rowId) { return base.getBinary(rowId); }

  @Override public ColumnarArray getArray(int rowId) {
    if (elements == null || isNullAt(rowId)) return null;
    ListVector l = (ListVector) vector;
    int start = l.getElementStartIndex(rowId);
    return new ColumnarArray(elements, start, l.getElementEndIndex(rowId) - start);
  }

  @Override public ColumnarMap getMap(int rowId) {
    if (keys == null || isNullAt(rowId)) return null;
    MapVector m = (MapVector) vector;
    int start = m.getElementStartIndex(rowId);
    return new ColumnarMap(keys, values, start, m.getElementEndIndex(rowId) - start);
  }

  @Override public ColumnVector getChild(int ordinal) { return children[ordinal]; }
}
