/*
** expr.h — library-internal entry points of the expression module for the modules above it
** (scan, changes, txn); the public API is include/dk/expr.h, the statistics evaluator
** expr/skip.h.
*/
#ifndef DK_EXPR_EXPR_H
#define DK_EXPR_EXPR_H

#include "dk/expr.h"

/* dk_expr_bind with every node of the bound tree allocated with alloc (NULL: libc); the
** evaluator's scratch for that tree (dk_expr_eval_filter, dk_expr_eval) uses it too. */
dk_status dk_expr__bind(dk_expr **out, const dk_expr *e, const struct ArrowSchema *schema,
                        const dk_allocator *alloc, dk_error *err);

/* Value expressions (value.c): binds any expression as a value (arithmetic, CASE, CAST,
** functions, columns, literals; predicates are BOOL values) against a struct schema. */
dk_status dk_expr__bind_value(dk_expr **out, const dk_expr *e, const struct ArrowSchema *schema,
                              const dk_allocator *alloc, dk_error *err);
/* Evaluates a bound value over a batch of that schema into an Arrow array of type `as` (NULL:
** the value's own type), cast as Spark's ANSI store assignment does (overflow and invalid input
** are DK_INVALID, prefixed with `target`, e.g. the column assigned). */
struct dk_atype;
dk_status dk_expr__eval_value(struct ArrowArray *out, const dk_expr *bound,
                              const struct dk_atype *as, const char *target,
                              const struct ArrowArray *batch, const dk_allocator *alloc,
                              dk_error *err);

/* The type of a bound value (b NULL), or the type a and b are compared as (Spark's wider type;
** DK_INVALID when they do not meet). */
dk_status dk_expr__value_type(struct dk_atype *out, const dk_expr *a, const dk_expr *b,
                              dk_error *err);
/* Prints the SQL name of a value type ("BIGINT", "DECIMAL(10,2)", "TIMESTAMP_NTZ"; "?" for
** types values cannot have): CAST text, messages. */
void dk_expr__type_sql(char *buf, size_t cap, const struct dk_atype *t);

#endif /* DK_EXPR_EXPR_H */
