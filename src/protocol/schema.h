/*
** schema.h — the Delta schema inside the library (src/protocol/schema.c; not API): parsing a
** schemaString into the public dk_type tree and exporting one as an Arrow C schema.
**
** Follows PROTOCOL.md "Schema Serialization Format" and "Column Mapping".
*/
#ifndef DK_PROTOCOL_SCHEMA_H
#define DK_PROTOCOL_SCHEMA_H

#include "codec/json/json.h"
#include "dk/arrow.h"
#include "dk/snapshot.h"
#include "util/util.h"

/* Parses a Delta schemaString into a type tree allocated in `ar`. */
dk_status dk_schema__parse(const dk_type **out, dk_arena *ar, const char *text, size_t len,
                           dk_error *err);
dk_status dk_schema__from_json(const dk_type **out, dk_arena *ar, const dk_json_value *v,
                               dk_error *err);

/* Exports `t` (a STRUCT) as an Arrow schema: logical names, or (physical != 0) the physical
 * names and "PARQUET:field_id" metadata of column mapping. */
dk_status dk_schema__to_arrow(struct ArrowSchema *out, const dk_type *t, int physical,
                              dk_error *err);

#endif /* DK_PROTOCOL_SCHEMA_H */
