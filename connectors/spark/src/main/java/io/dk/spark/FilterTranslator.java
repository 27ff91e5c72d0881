package io.dk.spark;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Set;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Spark DataSource V2 {@link Predicate}s to dk predicate text (the grammar of dk_expr_parse in
 * include/dk/expr.h). Anything not expressible returns null and stays a post-scan filter.
 */
final class FilterTranslator {
  private FilterTranslator() {}

  private static final DateTimeFormatter TS =
      DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSSSSS");

  /** dk text for p, or null. Top-level column names referenced are added to refs. */
  static String translate(Predicate p, Set<String> refs) {
    try {
      return pred(p, refs);
    } catch (RuntimeException e) {
      return null;
    }
  }

  private static String pred(Expression e, Set<String> refs) {
    if (!(e instanceof Predicate)) return null;
    Predicate p = (Predicate) e;
    Expression[] c = p.children();
    switch (p.name()) {
      case "=": case "<>": case "<=>": case "<": case "<=": case ">": case ">=": {
        String a = operand(c[0], refs), b = operand(c[1], refs);
        if (a == null || b == null) return null;
        String op = p.name().equals("<>") ? "!=" : p.name();
        return "(" + a + " " + op + " " + b + ")";
      }
      case "IS_NULL": case "IS_NOT_NULL": {
        String a = operand(c[0], refs);
        if (a == null) return null;
        return "(" + a + (p.name().equals("IS_NULL") ? " IS NULL)" : " IS NOT NULL)");
      }
      case "IN": {
        String v = operand(c[0], refs);
        if (v == null || c.length < 2) return null;
        StringBuilder sb = new StringBuilder("(").append(v).append(" IN (");
        for (int i = 1; i < c.length; i++) {
          if (!(c[i] instanceof Literal)) return null;
          String l = operand(c[i], refs);
          if (l == null) return null;
          if (i > 1) sb.append(", ");
          sb.append(l);
        }
        return sb.append("))").toString();
      }
      case "AND": case "OR": {
        String a = pred(c[0], refs), b = pred(c[1], refs);
        if (a == null || b == null) return null;
        return "(" + a + " " + p.name() + " " + b + ")";
      }
      case "NOT": {
        String a = pred(c[0], refs);
        return a == null ? null : "(NOT " + a + ")";
      }
      case "STARTS_WITH": {
        String a = operand(c[0], refs);
        if (a == null || !(c[1] instanceof Literal)) return null;
        Literal<?> l = (Literal<?>) c[1];
        if (!(l.dataType() instanceof StringType) || l.value() == null) return null;
        return "STARTS_WITH(" + a + ", " + quote(l.value().toString()) + ")";
      }
      default:
        return null;
    }
  }

  private static String operand(Expression e, Set<String> refs) {
    if (e instanceof NamedReference) {
      String[] names = ((NamedReference) e).fieldNames();
      if (names.length == 0) return null;
      refs.add(names[0]);
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < names.length; i++) {
        if (i > 0) sb.append('.');
        sb.append('`').append(names[i].replace("`", "``")).append('`');
      }
      return sb.toString();
    }
    if (e instanceof Literal) return literal((Literal<?>) e);
    return null;
  }

  private static String literal(Literal<?> l) {
    Object v = l.value();
    DataType t = l.dataType();
    if (v == null) return t instanceof NullType || t != null ? "NULL" : null;
    if (t instanceof BooleanType) return ((Boolean) v) ? "TRUE" : "FALSE";
    if (t instanceof ByteType) return "TINYINT '" + v + "'";
    if (t instanceof ShortType) return "SMALLINT '" + v + "'";
    if (t instanceof IntegerType) return "INT '" + v + "'";
    if (t instanceof LongType) return "BIGINT '" + v + "'";
    if (t instanceof FloatType) {
      float f = (Float) v;
      return Float.isFinite(f) ? "FLOAT '" + f + "'" : null;
    }
    if (t instanceof DoubleType) {
      double d = (Double) v;
      return Double.isFinite(d) ? "DOUBLE '" + d + "'" : null;
    }
    if (t instanceof StringType) return quote(v.toString());
    if (t instanceof DecimalType) {
      DecimalType dt = (DecimalType) t;
      BigDecimal bd = v instanceof Decimal ? ((Decimal) v).toJavaBigDecimal() : (BigDecimal) v;
      return "DECIMAL(" + dt.precision() + "," + dt.scale() + ") '" + bd.toPlainString() + "'";
    }
    if (t instanceof DateType) {
      LocalDate d = LocalDate.ofEpochDay(((Number) v).longValue());
      if (d.getYear() < 1 || d.getYear() > 9999) return null;
      return "DATE '" + d + "'";
    }
    if (t instanceof TimestampType || t instanceof TimestampNTZType) {
      long micros = ((Number) v).longValue();
      LocalDateTime dt = LocalDateTime.ofInstant(
          Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L),
              Math.floorMod(micros, 1_000_000L) * 1000L), ZoneOffset.UTC);
      if (dt.getYear() < 1 || dt.getYear() > 9999) return null;
      return (t instanceof TimestampType ? "TIMESTAMP '" + dt.format(TS) + "Z'"
          : "TIMESTAMP_NTZ '" + dt.format(TS) + "'");
    }
    if (t instanceof BinaryType) {
      StringBuilder sb = new StringBuilder("X'");
      for (byte b : (byte[]) v) sb.append(String.format("%02x", b & 0xff));
      return sb.append('\'').toString();
    }
    return null;
  }

  static String quote(String s) {
    return "'" + s.replace("'", "''") + "'";
  }
}
