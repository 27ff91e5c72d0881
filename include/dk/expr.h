/**
 * @file dk/expr.h
 * @brief Predicates: construction, a SQL-like parser, binding to an Arrow schema, vectorized
 *        three-valued evaluation over Arrow batches, partition values and conjunct splitting.
 *
 * A ::dk_expr is an immutable, reference-counted tree. Constructors that take child
 * expressions CONSUME one reference of each child, also when they fail, so trees can be built
 * inline: `dk_expr_cmp(&e, DK_CMP_LT, col, lit, &err)`. Use dk_expr_ref() to keep a child
 * for yourself. A tree may be shared between threads for reading (evaluation, binding,
 * printing) as long as nobody frees it concurrently.
 *
 * Semantics follow Spark SQL: three-valued logic (TRUE, FALSE, NULL), strings compare by
 * their UTF-8 bytes, doubles order NaN above every other value with NaN = NaN and
 * -0.0 = 0.0, timestamps are microseconds since 1970-01-01 00:00:00 UTC. Column names are
 * resolved case-insensitively by dk_expr_bind().
 *
 * Text grammar accepted by dk_expr_parse() (keywords are case-insensitive):
 * @code
 *   expr      := or ;  or := and (OR and)* ;  and := not (AND not)* ;  not := NOT not | pred
 *   pred      := operand [ cmpop operand | IS [NOT] NULL | [NOT] IN '(' operand, ... ')'
 *                         | [NOT] LIKE 'pattern' | [NOT] BETWEEN operand AND operand ]
 *   cmpop     := = | == | != | <> | <=> | < | <= | > | >=
 *   operand   := '(' expr ')' | column | literal | STARTS_WITH '(' operand ',' 'text' ')'
 *              | ISNAN '(' operand ')'
 *   column    := name ('.' name)*   name := [A-Za-z_][A-Za-z0-9_]* | `any text, `` escapes`
 *   literal   := NULL | TRUE | FALSE | 'text' (with '' escape) | X'0a0b' | [-]digits (int64)
 *              | [-]digits.digits (decimal, coerced to the column) | digits[.digits]e[-]digits
 *              (double) | DATE 'yyyy-mm-dd' | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff][Z|+hh:mm]'
 *              | TIMESTAMP_NTZ '...' | TINYINT|SMALLINT|INT|BIGINT|FLOAT|DOUBLE 'text'
 *              | DECIMAL(p,s) 'text'
 * @endcode
 * LIKE follows Spark: '%' matches any sequence of characters, '_' exactly one character (code
 * point), '\' escapes the next character. 'abc%' becomes STARTS_WITH (which statistics can
 * prune) and a pattern without wildcards becomes `=`. `a BETWEEN lo AND hi` is parsed as
 * `a >= lo AND a <= hi` and NOT BETWEEN as its negation (Spark's definition); `isnan(x)` as
 * `x <=> DOUBLE 'NaN'`, which is TRUE for NaN and FALSE otherwise, NULL included (Spark's
 * isnan). TIMESTAMP text without a zone means UTC.
 */
#ifndef DK_EXPR_H
#define DK_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dk/arrow.h"
#include "dk/common.h"

DK_BEGIN_DECL

/** An immutable expression tree (opaque, reference-counted). */
typedef struct dk_expr dk_expr;

/** Node kinds, for introspection. */
typedef enum dk_expr_kind {
  DK_EXPR_COLUMN = 1,
  DK_EXPR_LITERAL = 2,
  DK_EXPR_CMP = 3,          /**< two children */
  DK_EXPR_AND = 4,          /**< two or more children */
  DK_EXPR_OR = 5,           /**< two or more children */
  DK_EXPR_NOT = 6,          /**< one child */
  DK_EXPR_IS_NULL = 7,      /**< one child */
  DK_EXPR_IS_NOT_NULL = 8,  /**< one child */
  DK_EXPR_IN = 9,           /**< child 0 is the value, children 1.. the list */
  DK_EXPR_STARTS_WITH = 10, /**< child 0 is the value, child 1 a string literal */
  DK_EXPR_LIKE = 11         /**< child 0 is the value, child 1 the pattern (string literal) */
} dk_expr_kind;

/** Comparison operators. */
typedef enum dk_cmp_op {
  DK_CMP_EQ = 1,
  DK_CMP_NE = 2,
  DK_CMP_LT = 3,
  DK_CMP_LE = 4,
  DK_CMP_GT = 5,
  DK_CMP_GE = 6,
  DK_CMP_NULL_SAFE_EQ = 7 /**< `<=>`: NULL <=> NULL is TRUE, never NULL */
} dk_cmp_op;

/** Literal types (the Delta primitive types). */
typedef enum dk_lit_type {
  DK_LIT_NULL = 0, /**< untyped NULL */
  DK_LIT_BOOL = 1,
  DK_LIT_INT8 = 2,
  DK_LIT_INT16 = 3,
  DK_LIT_INT32 = 4,
  DK_LIT_INT64 = 5,
  DK_LIT_FLOAT = 6,
  DK_LIT_DOUBLE = 7,
  DK_LIT_DECIMAL = 8,       /**< unscaled int128 + precision + scale */
  DK_LIT_STRING = 9,
  DK_LIT_BINARY = 10,
  DK_LIT_DATE = 11,         /**< days since 1970-01-01 */
  DK_LIT_TIMESTAMP = 12,    /**< microseconds since the epoch, UTC */
  DK_LIT_TIMESTAMP_NTZ = 13 /**< microseconds since the epoch, wall clock */
} dk_lit_type;

/* ---- construction --------------------------------------------------------------------- */

/* Memory: every node remembers the allocator it was made with and is freed through it. Column
 * and literal constructors allocate with libc; a node built from children (dk_expr_cmp, _and,
 * _or, _not, _is_null, _in, _starts_with, _like) with its first child's allocator, so a tree
 * built on leaves of one allocator stays on it. dk_expr_parse_v2 makes every node with
 * its options' allocator, dk_expr_split copies with the allocator of the tree it splits, and
 * a bound tree (dk_expr_bind) is libc's (the table's allocator when a scan binds it). */

/** Adds a reference; returns e. */
DK_API dk_expr *dk_expr_ref(dk_expr *e);
/** Drops a reference; frees the tree with the last one. Accepts NULL. */
DK_API void dk_expr_free(dk_expr *e);

/** Column reference by path (n >= 1 names; nested struct fields follow their parents). */
DK_API DK_WARN_UNUSED dk_status dk_expr_column(dk_expr **out, const char *const *path, size_t n, dk_error *err);

DK_API DK_WARN_UNUSED dk_status dk_expr_literal_null(dk_expr **out, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_bool(dk_expr **out, bool v, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_int8(dk_expr **out, int8_t v, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_int16(dk_expr **out, int16_t v, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_int32(dk_expr **out, int32_t v, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_int64(dk_expr **out, int64_t v, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_float(dk_expr **out, float v, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_double(dk_expr **out, double v, dk_error *err);
/** Decimal from the unscaled two's-complement int128 value (hi:lo), precision 1..38,
 *  0 <= scale <= precision. The value must fit the precision. */
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_decimal(dk_expr **out, int64_t hi, uint64_t lo,
                                         int precision, int scale, dk_error *err);
/** Decimal from text such as "-12.340"; it must fit decimal(precision, scale) exactly. */
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_decimal_text(dk_expr **out, const char *text, int precision,
                                              int scale, dk_error *err);
/** UTF-8 string (validated), copied. */
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_string(dk_expr **out, const char *s, size_t len, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_binary(dk_expr **out, const void *p, size_t len, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_date(dk_expr **out, int32_t days, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_timestamp(dk_expr **out, int64_t micros_utc, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_literal_timestamp_ntz(dk_expr **out, int64_t micros, dk_error *err);

/** Comparison `a op b`; consumes a and b. */
DK_API DK_WARN_UNUSED dk_status dk_expr_cmp(dk_expr **out, dk_cmp_op op, dk_expr *a, dk_expr *b, dk_error *err);
/** Conjunction / disjunction of two predicates; consumes a and b. */
DK_API DK_WARN_UNUSED dk_status dk_expr_and(dk_expr **out, dk_expr *a, dk_expr *b, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_or(dk_expr **out, dk_expr *a, dk_expr *b, dk_error *err);
/** N-ary forms (n >= 1; n == 1 returns the child itself); consume every item. */
DK_API DK_WARN_UNUSED dk_status dk_expr_and_n(dk_expr **out, dk_expr *const *items, size_t n, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_or_n(dk_expr **out, dk_expr *const *items, size_t n, dk_error *err);
DK_API DK_WARN_UNUSED dk_status dk_expr_not(dk_expr **out, dk_expr *a, dk_error *err);
/** `a IS NULL` (negated = false) or `a IS NOT NULL`; consumes a. */
DK_API DK_WARN_UNUSED dk_status dk_expr_is_null(dk_expr **out, dk_expr *a, bool negated, dk_error *err);
/** `value IN (list...)`, n >= 1; consumes value and every list item. */
DK_API DK_WARN_UNUSED dk_status dk_expr_in(dk_expr **out, dk_expr *value, dk_expr *const *list, size_t n,
                            dk_error *err);
/** `STARTS_WITH(value, prefix)` with a UTF-8 prefix (copied); consumes value. */
DK_API DK_WARN_UNUSED dk_status dk_expr_starts_with(dk_expr **out, dk_expr *value, const char *prefix,
                                     size_t len, dk_error *err);

/**
 * `value LIKE pattern` (Spark semantics, '\' escape); consumes value. A pattern that is a
 * plain prefix followed by one '%' gives a STARTS_WITH node, one without wildcards an
 * equality; a pattern ending in a lone '\' is DK_INVALID.
 */
DK_API DK_WARN_UNUSED dk_status dk_expr_like(dk_expr **out, dk_expr *value, const char *pattern, size_t len,
                              dk_error *err);

/* ---- introspection -------------------------------------------------------------------- */

DK_API dk_expr_kind dk_expr_get_kind(const dk_expr *e);
/** Number of children (0 for columns and literals). */
DK_API size_t dk_expr_num_children(const dk_expr *e);
/** Borrowed child i (lives as long as e). */
DK_API const dk_expr *dk_expr_child(const dk_expr *e, size_t i);
/** Comparison operator of a DK_EXPR_CMP node (0 otherwise). */
DK_API dk_cmp_op dk_expr_get_cmp_op(const dk_expr *e);
/** Column path length and names (borrowed, NUL-terminated). */
DK_API size_t dk_expr_column_depth(const dk_expr *e);
DK_API const char *dk_expr_column_name(const dk_expr *e, size_t i);
/** Literal type (DK_LIT_NULL for non-literals too). */
DK_API dk_lit_type dk_expr_literal_type(const dk_expr *e);

/* ---- text ----------------------------------------------------------------------------- */

/**
 * Parses a predicate. Errors are DK_INVALID ("... at offset N"). Nesting deeper than 256
 * levels is DK_INVALID.
 */
DK_API DK_WARN_UNUSED dk_status dk_expr_parse(dk_expr **out, const char *text, dk_error *err);
/** Like dk_expr_parse for text that is not NUL-terminated. */
DK_API DK_WARN_UNUSED dk_status dk_expr_parsen(dk_expr **out, const char *text, size_t len, dk_error *err);

#define DK_EXPR_PARSE_OPTIONS_VERSION 1
typedef struct dk_expr_parse_options {
  unsigned version;          /**< DK_EXPR_PARSE_OPTIONS_VERSION */
  const dk_allocator *alloc; /**< every node of the tree and the parser's scratch; NULL = libc */
} dk_expr_parse_options;

/** dk_expr_parsen with options (NULL = defaults); a version newer than this dk's is
 *  DK_INVALID. */
DK_API DK_WARN_UNUSED dk_status dk_expr_parse_v2(dk_expr **out, const char *text, size_t len,
                                                 const dk_expr_parse_options *opts,
                                                 dk_error *err);

/**
 * Prints e in the grammar above; parsing the result gives an equal tree. *out is
 * NUL-terminated and freed with dk_free() (dk/common.h).
 */
DK_API DK_WARN_UNUSED dk_status dk_expr_to_string(char **out, const dk_expr *e, dk_error *err);
/** Deprecated alias of dk_free, kept for existing callers. */
DK_API void dk_expr_string_free(char *s);

/* ---- binding and evaluation ----------------------------------------------------------- */

/**
 * Resolves column paths against a struct schema (a record batch schema: format "+s"),
 * case-insensitively (an ambiguous match is DK_INVALID), and type-checks the tree the way
 * Spark coerces: integer literals against any numeric column, decimal literals against
 * integer/decimal columns exactly, double literals by casting to double, string literals
 * against date/timestamp/numeric/boolean columns by parsing them, DATE against TIMESTAMP
 * columns and back. Unknown columns are DK_NOT_FOUND, type errors DK_INVALID; messages name
 * the column. A bound tree remembers the types it was bound to; evaluate it only against
 * batches of that schema. A field whose Arrow metadata carries
 * `delta.columnMapping.physicalName` is looked up in file statistics under that name.
 */
DK_API DK_WARN_UNUSED dk_status dk_expr_bind(dk_expr **out, const dk_expr *e, const struct ArrowSchema *schema,
                              dk_error *err);

/** True when e came from dk_expr_bind(). */
DK_API bool dk_expr_is_bound(const dk_expr *e);

/**
 * Evaluates a bound predicate over a struct batch (one child per schema field; offsets at
 * every level are honoured). `schema` (may be NULL) is only used to check the column count.
 * *out_bool receives an Arrow boolean array of batch->length rows whose validity carries
 * NULL. The batch is only read; evaluation allocates O(rows) scratch per call, never per row.
 */
DK_API DK_WARN_UNUSED dk_status dk_expr_eval(struct ArrowArray *out_bool, const dk_expr *bound,
                              const struct ArrowSchema *schema, const struct ArrowArray *batch,
                              dk_error *err);

/**
 * Like dk_expr_eval, but writes one byte per row: 1 when the predicate is TRUE, 0 when it
 * is FALSE or NULL (the SQL WHERE rule). out_mask has room for batch->length bytes.
 * *out_selected (may be NULL) receives the number of 1 bytes.
 */
DK_API DK_WARN_UNUSED dk_status dk_expr_eval_filter(uint8_t *out_mask, int64_t *out_selected,
                                     const dk_expr *bound, const struct ArrowSchema *schema,
                                     const struct ArrowArray *batch, dk_error *err);

/* ---- partition values ----------------------------------------------------------------- */

/**
 * Parses one partition value as serialized in a Delta log (`partitionValues`) into a literal
 * of the given Delta primitive type name ("string", "long", "integer", "short", "byte",
 * "float", "double", "boolean", "date", "timestamp", "timestamp_ntz", "binary",
 * "decimal(p,s)"). NULL text, "" (for every type, as the protocol says) and
 * "__HIVE_DEFAULT_PARTITION__" give a NULL literal (DK_LIT_NULL). Timestamps accept
 * "yyyy-mm-dd hh:mm:ss[.ffffff]" (UTC for "timestamp", per the protocol) and ISO-8601 with
 * 'T' and 'Z' or an offset. Malformed values are DK_CORRUPT.
 */
DK_API DK_WARN_UNUSED dk_status dk_partition_literal_parse(dk_expr **out_literal, const char *text,
                                          const char *delta_type, dk_error *err);

/**
 * Builds a struct batch of n_rows rows (one per file) for `schema` (a "+s" schema whose
 * fields are the partition columns) from serialized partition values, row-major:
 * values[row * schema->n_children + col], NULL = null. The Arrow type of each field decides
 * how its text is parsed (as dk_partition_literal_parse does). Evaluate a predicate bound to
 * the same schema over it to prune files exactly.
 */
DK_API DK_WARN_UNUSED dk_status dk_partition_batch(struct ArrowArray *out, const struct ArrowSchema *schema,
                                    const char *const *values, int64_t n_rows, dk_error *err);

/* ---- conjunct splitting ---------------------------------------------------------------- */

/**
 * Splits the top-level AND conjuncts of e (bound or not) into those that reference only
 * the given top-level columns (case-insensitive; e.g. the partition columns) and the rest.
 * Either output is NULL when it has no conjunct. Both outputs are unbound trees (re-bind
 * each against the schema it will be evaluated on). Conjuncts that reference no column at
 * all go to *out_only.
 */
DK_API DK_WARN_UNUSED dk_status dk_expr_split(dk_expr **out_only, dk_expr **out_rest, const dk_expr *e,
                               const char *const *columns, size_t n_columns, dk_error *err);

/** True when every column e references is one of `columns` (top-level, case-insensitive). */
DK_API bool dk_expr_references_only(const dk_expr *e, const char *const *columns,
                                    size_t n_columns);

DK_END_DECL

#endif /* DK_EXPR_H */
