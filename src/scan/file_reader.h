/*
** file_reader.h — reading single data files of a table, for the rest of the library (change
** data feed, DML): "read this file with the table's schema, column mapping, type widening,
** partition values, deletion vector and `_metadata` columns, with a projection and a
** predicate, and give me Arrow batches and/or the physical row indexes that match".
**
** A dk_scan__file_reader is built once from a snapshot (the table's schema, column mapping
** mode, partition columns and row-tracking columns at that version) and is immutable: any
** number of files may be open on it at a time, each dk_scan__file used by one thread. The
** file need not be an active file of that snapshot: any add/remove/cdc action's file of the
** table described by a dk_file_entry (path, size, modificationTime, partitionValues,
** deletionVector, baseRowId, defaultRowCommitVersion) can be read.
**
** Selection: rows deleted by the entry's deletion vector are dropped (give an entry without
** `dv` to see them), then rows the predicate does not make TRUE. Row groups and pages whose
** Parquet statistics rule the predicate out are not read. Row indexes are physical: the
** position of the row in the file (0-based), as `_metadata.row_index` and deletion vectors
** count them.
*/
#ifndef DK_SCAN_FILE_READER_H
#define DK_SCAN_FILE_READER_H

#include <stdbool.h>

#include "dk/expr.h"
#include "dk/scan.h"
#include "dk/snapshot.h"

typedef struct dk_scan__file_reader dk_scan__file_reader;
typedef struct dk_scan__file dk_scan__file;

typedef struct dk_scan__file_reader_options {
  /* Output columns: names or dotted nested paths as in dk_scan_options; NULL: every column
  ** (data columns, then partition columns); non-NULL with n_columns == 0: none (row-index
  ** mode, or `_metadata` only). */
  const char *const *columns;
  size_t n_columns;
  const dk_expr *predicate; /* unbound; NULL: every row (that the DV keeps) */
  unsigned metadata_fields; /* DK_META_* bits of the `_metadata` struct column (0: none) */
  int64_t batch_size;       /* rows per batch at most; <= 0: 65536 */
  /* Columns that are not in the table schema (a change data feed's `_change_type`,
  ** `_commit_version`, `_commit_timestamp`), requested, filtered and projected by name like
  ** table columns: read from every file by name (a cdc file's `_change_type`; a file without
  ** the column gives nulls), or, where extra_constant[i] is set, constant per file with the
  ** value the caller gives at open, as partition values are. The fields must outlive the
  ** reader. */
  const dk_field *extra_columns;
  size_t n_extra_columns;
  const bool *extra_constant; /* n_extra_columns flags, or NULL (none constant) */
} dk_scan__file_reader_options;

/* Holds a reference to snap. Errors as dk_scan_new (unknown columns, bad predicate). */
dk_status dk_scan__file_reader_new(dk_scan__file_reader **out, dk_snapshot *snap,
                                   const dk_scan__file_reader_options *opts, dk_error *err);
void dk_scan__file_reader_free(dk_scan__file_reader *r);
/* The schema of the batches: the output columns, then `_metadata` when asked for. */
dk_status dk_scan__file_reader_schema(struct ArrowSchema *out, const dk_scan__file_reader *r,
                                      dk_error *err);

/* Opens one file: its footer and deletion vector are read here. f's strings must stay valid
** until the file is closed. */
dk_status dk_scan__file_open(dk_scan__file **out, const dk_scan__file_reader *r,
                             const dk_file_entry *f, dk_error *err);
/* Like dk_scan__file_open, but with keep_dv (may be NULL) only the rows it deletes are
** selected (those f->dv deletes excepted): the rows two deletion vectors of a file differ by
** (change data feed, delta-spark's IF_NOT_CONTAINED row index filter); keep_dv and
** `constants` must outlive the file.
** `constants` (may be NULL: nulls) holds the text of each constant extra column, in their
** order (parsed as partition values of the column's type are). */
dk_status dk_scan__file_open_selected(dk_scan__file **out, const dk_scan__file_reader *r,
                                      const dk_file_entry *f, const dk_dv_descriptor *keep_dv,
                                      const char *const *constants, dk_error *err);
/* Like dk_scan__file_open, but only the rows of `rows` (physical indexes; an in-memory set,
** which must outlive the file) are selected, those f->dv deletes excepted: row groups without
** any are not read, and of the others only the span of pages holding them (DML: the rows a
** first pass over the key columns found). */
struct dk_dv;
dk_status dk_scan__file_open_rows(dk_scan__file **out, const dk_scan__file_reader *r,
                                  const dk_file_entry *f, const struct dk_dv *rows,
                                  dk_error *err);
/* Whether the reader's predicate rules file f out without reading it: its conjuncts over
** partition columns and constant extra columns are false for f's values, or its statistics
** (f->stats, when set) show no row can match. */
dk_status dk_scan__file_prunes(bool *out, const dk_scan__file_reader *r, const dk_file_entry *f,
                               const char *const *constants, dk_error *err);
/* The next non-empty batch of selected rows; out->release == NULL at the end of the file. */
dk_status dk_scan__file_next(struct ArrowArray *out, dk_scan__file *f, dk_error *err);
/* The physical row indexes of every selected row not yet returned, ascending, read to the
** end of the file: rows[0..*n) lives in the file's buffer until the next call on f or its
** close (no output columns are built; open a reader with no columns for this alone). */
dk_status dk_scan__file_rows(const int64_t **rows, int64_t *n, dk_scan__file *f, dk_error *err);
/* The number of rows physically in the file (its Parquet footer), deleted rows included. */
int64_t dk_scan__file_num_rows(const dk_scan__file *f);
void dk_scan__file_close(dk_scan__file *f);

#endif /* DK_SCAN_FILE_READER_H */
