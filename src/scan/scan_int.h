/*
** scan_int.h — library-internal pieces of the scan module (not API): Arrow array surgery
** used while reading (row selection, casts for type widening, all-null columns, mapping a
** file's physical columns onto the table's logical schema).
*/
#ifndef DK_SCAN_INT_H
#define DK_SCAN_INT_H

#include "arrow/array.h"
#include "dk/scan.h"
#include "dk/snapshot.h"

/* An all-null array of n rows of the type described by `schema` (nested types included). */
dk_status dk_scan__null_array(struct ArrowArray *out, const struct ArrowSchema *schema, int64_t n,
                              const dk_allocator *alloc, dk_error *err);

/* A new array holding rows idx[0..m) (logical indices, ascending or not) of src, whose type
** is `schema`. src is left untouched. */
dk_status dk_scan__take(struct ArrowArray *out, const struct ArrowSchema *schema,
                        const struct ArrowArray *src, const int64_t *idx, int64_t m,
                        const dk_allocator *alloc, dk_error *err);

/* Maps `src` (described by src_schema, read from a data file; consumed) onto the logical type
** `t` whose Arrow form is `tgt`: struct fields are found by name, physical name or field id
** (per `mode`), fields missing from the file become nulls, and primitive values are widened
** (integer widths, integer -> float/double/decimal, float -> double, decimal scale/precision,
** date -> timestamp_ntz, timestamp units). Other mismatches are DK_UNSUPPORTED. */
dk_status dk_scan__conform(struct ArrowArray *out, const dk_type *t, const struct ArrowSchema *tgt,
                           dk_column_mapping_mode mode, const struct ArrowSchema *src_schema,
                           struct ArrowArray *src, const dk_allocator *alloc, dk_error *err);

/* Keeps, of src (a struct array of schema src_schema; consumed), the fields that the struct
** schema tgt names (a subset, matched by name, recursively into nested structs): the output
** of a nested projection whose filter read more fields. Non-struct arrays are moved. */
dk_status dk_scan__project(struct ArrowArray *out, const struct ArrowSchema *tgt,
                           const struct ArrowSchema *src_schema, struct ArrowArray *src,
                           const dk_allocator *alloc, dk_error *err);

/* Finds the child of a struct schema that stores logical field f (-1 when absent). */
int64_t dk_scan__find_child(const struct ArrowSchema *src_schema, const dk_field *f,
                            dk_column_mapping_mode mode);


#endif /* DK_SCAN_INT_H */
