/*
** skip.h — data skipping with per-file statistics (library-internal, not API).
**
** A file's `stats` JSON (Delta protocol, "Per-file Statistics": numRecords, and minValues,
** maxValues, nullCount nested like the schema and keyed by PHYSICAL column names) is parsed
** by the caller (lazily: only when a predicate has data columns) and viewed through
** dk_file_stats. dk_expr__skip_eval() answers whether the file can be skipped for a predicate
** bound with dk_expr_bind() against the table's logical schema: CAN_SKIP only when no row of
** the file can make the predicate TRUE. Missing stats, missing columns, unparsable values and
** unsupported shapes all answer MUST_READ.
*/
#ifndef DK_EXPR_SKIP_H
#define DK_EXPR_SKIP_H

#include "codec/json/json.h"
#include "dk/expr.h"

typedef struct dk_file_stats {
  const dk_json_value *root; /* parsed stats object, or NULL when the file has no stats */
  /* float/double maxima do not account for NaN (Parquet statistics leave NaN out; Spark's
  ** Delta stats put "NaN" in maxValues instead): predicates a NaN row satisfies (>, >=, !=
  ** and the negations that become them) are then never skipped on a float column */
  bool float_max_excludes_nan;
} dk_file_stats;

typedef enum dk_skip_result { DK_SKIP_MUST_READ = 0, DK_SKIP_CAN_SKIP = 1 } dk_skip_result;

/* Delta/Spark truncate string statistics to this many UTF-16 code units by default. */
#define DK_STATS_STRING_PREFIX 32

dk_skip_result dk_expr__skip_eval(const dk_expr *bound, const dk_file_stats *stats);

/* True when the predicate references at least one column (i.e. stats could matter). */
bool dk_expr__has_columns(const dk_expr *e);

#endif /* DK_EXPR_SKIP_H */
