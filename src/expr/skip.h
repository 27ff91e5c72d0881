/*
** skip.h — data skipping with statistics (library-internal, not API).
**
** One evaluator, dk_expr__skip_stats(), answers whether a unit of rows (a file, a row group, a
** range of pages) can be skipped for a predicate bound with dk_expr_bind(): CAN_SKIP only when
** no row of the unit can make the predicate TRUE. It reads typed statistics through a
** provider (min, max, null count per column, row count of the unit: kernel-rs's
** ParquetStatsProvider is the model); missing statistics, missing columns, values of another
** type and unsupported shapes all answer MUST_READ. Two providers exist:
**   - Delta per-file stats (Delta protocol, "Per-file Statistics": numRecords, and minValues,
**     maxValues, nullCount nested like the schema and keyed by PHYSICAL column names), parsed
**     by the caller into JSON and viewed through dk_file_stats: dk_expr__skip_eval();
**   - Parquet column-chunk and page-index statistics (src/scan/rowgroup.c).
*/
#ifndef DK_EXPR_SKIP_H
#define DK_EXPR_SKIP_H

#include "codec/json/json.h"
#include "dk/expr.h"
#include "protocol/values.h"

typedef struct dk_colref dk_colref; /* a bound column reference (expr_int.h) */

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

/* A min or max statistic as a provider gives it: every representation it has (the evaluator
** picks the one the comparison needs). INT: integers, dates (days since the epoch),
** timestamps (microseconds since the epoch, as written: the evaluator widens them by the
** 999 us writers may have truncated); DBL: a finite double (float columns: the 32-bit value);
** DEC: a decimal's unscaled value at the COLUMN's (table's) scale; STR: UTF-8 bytes (a maximum
** of 32 or more UTF-16 units is taken as a possibly truncated prefix); BOOL. */
enum { DK_STAT_INT = 1, DK_STAT_DBL = 2, DK_STAT_DEC = 4, DK_STAT_STR = 8, DK_STAT_BOOL = 16 };
typedef struct dk_stat_value {
  unsigned has; /* DK_STAT_* bits */
  int64_t i;
  double d;
  dk_i128 dec;
  const char *s;
  size_t len;
  bool b;
} dk_stat_value;

/* Statistics of one unit of rows. Columns are bound references (their physical path, Arrow
** type and compare domain); a getter returns false when it has no such statistic. */
typedef struct dk_stats_provider {
  const void *ctx;
  bool (*num_rows)(const void *ctx, int64_t *out);
  bool (*null_count)(const void *ctx, const dk_colref *col, int64_t *out);
  bool (*value)(const void *ctx, const dk_colref *col, bool is_max, dk_stat_value *out);
  /* float/double maxima leave NaN out (see dk_file_stats) */
  bool float_max_excludes_nan;
} dk_stats_provider;

dk_skip_result dk_expr__skip_stats(const dk_expr *bound, const dk_stats_provider *stats);

/* The column path and Arrow type of a bound column reference (for providers). */
int dk_expr__colref_depth(const dk_colref *col);
const char *dk_expr__colref_phys(const dk_colref *col, int level);

/* The Delta per-file stats provider's getters over a parsed stats object (root: the object,
** or NULL): numRecords and a column's nullCount (non-negative counts only), and a column's
** minValues/maxValues entry in every representation it parses as for the column's type.
** dk_expr__skip_eval() reads through them; the scan's columnar statistics (scan/stats.c) are
** filled with them, once per file. */
bool dk_expr__json_num_rows(const dk_json_value *root, int64_t *out);
bool dk_expr__json_null_count(const dk_json_value *root, const dk_colref *col, int64_t *out);
bool dk_expr__json_value(const dk_json_value *root, const dk_colref *col, bool is_max,
                         dk_stat_value *out);

/* The bound column references whose statistics dk_expr__skip_stats() may read for e (the
** columns of the comparisons, null tests, prefixes and boolean columns it walks; the same
** reference may repeat): calls fn for each, the reference being the one it passes providers. */
void dk_expr__skip_colrefs(const dk_expr *e, void (*fn)(void *ctx, const dk_colref *col),
                           void *ctx);
/* A copy of the parts of a bound column reference statistics are read by (physical path,
** type, domain) in ar: a key for dk_expr__colref_same_stats and the getters above. */
dk_status dk_expr__colref_copy(const dk_colref **out, const dk_colref *src, dk_arena *ar,
                               dk_error *err);
/* The DK_STAT_* representations the evaluator may read of the column's min/max: INT, DBL and
** BOOL always; DEC for decimal columns, STR for string columns. */
unsigned dk_expr__colref_stat_reps(const dk_colref *col);
/* What a statistics provider keys a bound column by: its physical path, leaf type and
** compare domain (equal keys read the same statistics the same way). */
bool dk_expr__colref_same_stats(const dk_colref *a, const dk_colref *b);

/* True when the predicate references at least one column (i.e. stats could matter). */
bool dk_expr__has_columns(const dk_expr *e);

#endif /* DK_EXPR_SKIP_H */
