/*
** expr_int.h — layout of dk_expr nodes and helpers shared by the src/expr sources (not API).
**
** Unbound trees carry names and literals. dk_expr_bind() produces a new tree whose COLUMN
** nodes carry child-index paths and Arrow types, and whose comparisons are normalised to
** `column op literal` with the literal converted into the column's physical domain (see
** bind.c), so the evaluator (eval.c) and the statistics checker (skip.c) need no coercion.
*/
#ifndef DK_EXPR_INT_H
#define DK_EXPR_INT_H

#include "arrow/array.h"
#include "dk/expr.h"
#include "expr/expr.h"
#include "protocol/values.h"
#include "util/util.h"


#define DK_EXPR_MAX_DEPTH 256

typedef struct dk_lit {
  dk_lit_type type;
  int32_t precision, scale;  /* DECIMAL */
  union {
    bool b;
    int64_t i;   /* INT8..INT64, DATE, TIMESTAMP, TIMESTAMP_NTZ */
    double d;    /* FLOAT (stored widened, exact), DOUBLE */
    dk_i128 dec; /* DECIMAL unscaled */
  } v;
  char *bytes;   /* STRING/BINARY (owned, NUL-terminated for convenience) */
  size_t len;
} dk_lit;

/* Physical compare domain of a bound comparison (column side). */
typedef enum dk_dom {
  DK_DOM_NONE = 0,
  DK_DOM_I64,   /* int8/16/32/64, date32, timestamp(any unit), time: compare as int64 */
  DK_DOM_F64,   /* float/double columns, or ints compared with a double */
  DK_DOM_DEC,   /* decimal128 columns, compared as int128 at the column's scale */
  DK_DOM_BYTES, /* utf8/binary */
  DK_DOM_BOOL
} dk_dom;

/* How a bound CMP node is evaluated. */
typedef enum dk_cmpk {
  DK_CK_COL_LIT = 1, /* child[0] column, lit converted into dom; op applies */
  DK_CK_CONST,       /* result is `cres` for non-null column rows, NULL for null rows
                        (or for NULL_SAFE_EQ: FALSE/`cres`, never NULL) */
  DK_CK_NULL,        /* at least one side is a NULL literal (non null-safe): all NULL */
  DK_CK_COL_COL,     /* two columns of one domain */
  DK_CK_LIT_LIT,     /* folded at bind time: result in cres/cnull */
  DK_CK_VALUES       /* both sides are value expressions (value.c), compared as `vtype` */
} dk_cmpk;

/* Functions of DK_EXPR_CALL (value.c has their names, arities and typing). */
typedef enum dk_fn {
  DK_FN_NONE = 0,
  DK_FN_COALESCE, DK_FN_IF, DK_FN_NULLIF, DK_FN_IFNULL, DK_FN_ABS, DK_FN_NEGATE, DK_FN_UPPER,
  DK_FN_LOWER, DK_FN_LENGTH, DK_FN_SUBSTRING, DK_FN_TRIM, DK_FN_LTRIM, DK_FN_RTRIM,
  DK_FN_CONCAT, DK_FN_ROUND, DK_FN_FLOOR, DK_FN_CEIL, DK_FN_GREATEST, DK_FN_LEAST,
  DK_FN_DATE_ADD, DK_FN_DATE_SUB
} dk_fn;

typedef struct dk_colref {
  int depth;
  char **names;       /* logical path as written */
  int32_t *idx;       /* bound: child index per level */
  char **phys;        /* bound: physical names per level (column mapping), else = resolved names */
  dk_atype type;      /* bound: leaf Arrow type */
  dk_dom dom;         /* bound: compare domain of the leaf type */
} dk_colref;

struct dk_expr {
  int refcount;
  const dk_allocator *alloc; /* every block of this node (children array, names, literal bytes,
                              * the node itself); NULL: libc */
  dk_expr_kind kind;
  dk_cmp_op op;
  bool bound;
  size_t n_children;
  dk_expr **children;
  dk_colref col;      /* COLUMN */
  dk_lit lit;         /* LITERAL; STARTS_WITH prefix lives in child 1 */
  /* bound CMP */
  dk_cmpk ck;
  dk_dom dom;
  bool cres;          /* CONST / LIT_LIT result */
  bool cnull;         /* LIT_LIT: result NULL */
  /* bound CMP DK_CK_COL_LIT: literal in the column's domain */
  int64_t li;
  double ld;
  dk_i128 ldec;
  /* value expressions (value.c) */
  dk_arith_op aop;    /* ARITH */
  dk_fn fn;           /* CALL */
  bool has_else;      /* CASE: the last child is the ELSE result */
  dk_atype vtype;     /* CAST: the target type; bound value nodes: the result type */
  dk_atype ctype;     /* CMP DK_CK_VALUES: the type both sides are compared as */
  bool is_value;      /* bound: a node evaluated by value.c (or a predicate used as a value) */
};

/* ---- node helpers (expr.c) ------------------------------------------------------------- */
/* The _a forms allocate the node and everything it owns with alloc (NULL: libc). */
dk_status dk_expr__new(dk_expr **out, dk_expr_kind kind, size_t n_children, dk_error *err);
dk_status dk_expr__new_a(dk_expr **out, dk_expr_kind kind, size_t n_children,
                         const dk_allocator *alloc, dk_error *err);
dk_status dk_expr__lit_copy(dk_lit *dst, const dk_lit *src, dk_error *err);
dk_status dk_expr__lit_copy_a(dk_lit *dst, const dk_lit *src, const dk_allocator *alloc,
                              dk_error *err);
dk_status dk_expr__new_literal(dk_expr **out, const dk_lit *lit, dk_error *err);
dk_status dk_expr__new_literal_a(dk_expr **out, const dk_lit *lit, const dk_allocator *alloc,
                                 dk_error *err);
/* A column node of path[0..n) (names copied). */
dk_status dk_expr__column_a(dk_expr **out, const char *const *path, size_t n,
                            const dk_allocator *alloc, dk_error *err);
dk_status dk_expr__new_column_a(dk_expr **out, char **names, int depth,
                                const dk_allocator *alloc, dk_error *err);
/* A string or binary literal node of p[0..len) (copied; a string must be UTF-8 without NUL). */
dk_status dk_expr__lit_bytes_a(dk_expr **out, dk_lit_type t, const void *p, size_t len,
                               const dk_allocator *alloc, dk_error *err);
bool dk_expr__ident_is_plain(const char *s, size_t n);

/* ---- literals from text (values.c) ------------------------------------------------------ */

/* Parses a literal of Arrow type t from text (partition values, stats strings); NULL text
** or "__HIVE_DEFAULT_PARTITION__" -> DK_LIT_NULL. String and binary bytes are allocated with
** alloc (the caller frees them). */
dk_status dk__lit_from_text(dk_lit *out, const char *text, size_t n, const dk_atype *t,
                            const dk_allocator *alloc, dk_error *err);
/* Delta type name -> Arrow type (value.c: the one type-name parser, with
** dk_expr__type_from_name); an unknown name is DK_UNSUPPORTED. */
dk_status dk__atype_from_delta(dk_atype *out, const char *name, dk_error *err);

/* ---- LIKE (eval.c) ---------------------------------------------------------------------- */
#define DK_LIKE_ANY_SEQ (-1) /* '%' */
#define DK_LIKE_ANY_ONE (-2) /* '_' */
/* Compiles a Spark LIKE pattern ('\' escape) into codes (bytes 0..255 or the two wildcards);
** out has room for len codes. Returns false for a dangling or invalid escape. */
bool dk__like_compile(const char *pat, size_t len, int16_t *out, size_t *n_out);
/* Matches UTF-8 bytes s[0..n) against compiled codes ('_' consumes one code point). */
bool dk__like_match(const uint8_t *s, size_t n, const int16_t *pat, size_t m);

/* ---- bind (bind.c) --------------------------------------------------------------------- */
typedef struct dk_expr__binder {
  const struct ArrowSchema *schema;
  const dk_allocator *alloc; /* of every node of the bound tree */
  dk_error *err;
} dk_expr__binder;
dk_status dk_expr__bind_column(dk_expr__binder *b, dk_expr **out, const dk_expr *e);
dk_status dk_expr__bind_pred(dk_expr__binder *b, dk_expr **out, const dk_expr *e, int depth);
dk_dom dk_expr__dom_of(const dk_atype *t);
/* Flips an operator for swapped operands (a < b  <=>  b > a). */
dk_cmp_op dk_expr__flip(dk_cmp_op op);

/* ---- evaluation context (eval.c) ------------------------------------------------------- */
typedef struct dk_expr__ectx {
  dk_arena ar;
  int64_t n;
  const struct ArrowArray *batch;
  dk_error *err;
} dk_expr__ectx;

/* A resolved leaf column for the current batch. */
typedef struct dk_expr__colview {
  const struct ArrowArray *leaf;
  int64_t off;        /* buffer index of row 0 in the leaf */
  const uint8_t *ok;  /* per-row validity bytes, or NULL when every row is valid */
} dk_expr__colview;

dk_status dk_expr__resolve(dk_expr__ectx *c, const dk_colref *col, dk_expr__colview *cv);
/* Predicate evaluation into val/ok bytes (val[i] == 0 where ok[i] == 0). */
dk_status dk_expr__eval_pred(dk_expr__ectx *c, const dk_expr *e, uint8_t *val, uint8_t *ok,
                             int depth);

/* ---- value expressions (value.c) ------------------------------------------------------- */

/* A column of values of one type over the batch rows, in the evaluation arena. Integers of
** every width, booleans (0/1), dates (days) and timestamps (microseconds) live in i, floats and
** doubles in d, decimals (unscaled) in q, strings and binaries as n + 1 offsets into data. */
typedef struct dk_vv {
  dk_atype t;         /* DK_AT_NA for an untyped NULL */
  int64_t n;
  uint8_t *ok;        /* 1 = not NULL */
  int64_t *i;
  double *d;
  dk_i128 *q;
  int64_t *off;
  char *data;
} dk_vv;

bool dk_expr__is_value_kind(dk_expr_kind k);
/* Binds any expression as a value (predicates become BOOL values); sets vtype. */
dk_status dk_expr__bind_val(dk_expr__binder *b, dk_expr **out, const dk_expr *e, int depth);
/* A comparison with a value expression on either side (sets ck = DK_CK_VALUES). */
dk_status dk_expr__bind_cmp_values(dk_expr__binder *b, dk_expr **out, dk_cmp_op op,
                                   const dk_expr *x, const dk_expr *y, int depth);
dk_status dk_expr__eval_val(dk_vv *out, dk_expr__ectx *c, const dk_expr *e, int depth);
/* val/ok of a DK_CK_VALUES comparison or of a BOOL value node used as a predicate. */
dk_status dk_expr__eval_value_pred(dk_expr__ectx *c, const dk_expr *e, uint8_t *val,
                                   uint8_t *ok, int depth);
/* The function of a name (DK_FN_NONE when unknown) and its argument count range. */
dk_fn dk_expr__fn_lookup(const char *name, size_t len, int *min_args, int *max_args);
const char *dk_expr__fn_name(dk_fn f);
/* A SQL or Delta type name ("bigint", "decimal(10,2)", "string", ...) as an Arrow type. */
dk_status dk_expr__type_from_name(dk_atype *out, const char *name, size_t len, dk_error *err);

#endif /* DK_EXPR_INT_H */
