/**
 * @file dk/schema.h
 * @brief Delta types and schemas (PROTOCOL.md "Schema Serialization Format"), and typed
 *  partition values ("Partition Value Serialization").
 *
 * Types and fields are immutable and borrowed from the snapshot they came from
 * (dk_snapshot_schema in dk/snapshot.h).
 */
#ifndef DK_SCHEMA_H
#define DK_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "dk/common.h"

DK_BEGIN_DECL

typedef enum dk_type_id {
  DK_TYPE_STRING = 1,
  DK_TYPE_LONG,
  DK_TYPE_INTEGER,
  DK_TYPE_SHORT,
  DK_TYPE_BYTE,
  DK_TYPE_FLOAT,
  DK_TYPE_DOUBLE,
  DK_TYPE_BOOLEAN,
  DK_TYPE_BINARY,
  DK_TYPE_DATE,
  DK_TYPE_TIMESTAMP,
  DK_TYPE_TIMESTAMP_NTZ,
  DK_TYPE_DECIMAL,
  DK_TYPE_VARIANT,
  DK_TYPE_STRUCT,
  DK_TYPE_ARRAY,
  DK_TYPE_MAP
} dk_type_id;

typedef struct dk_field dk_field;
typedef struct dk_type dk_type;

struct dk_type {
  dk_type_id id;
  int32_t precision, scale;           /**< DECIMAL */
  const dk_type *element;             /**< ARRAY */
  int contains_null;                  /**< ARRAY */
  const dk_type *key, *value;         /**< MAP */
  int value_contains_null;            /**< MAP */
  size_t n_fields;                    /**< STRUCT */
  const dk_field *fields;             /**< STRUCT */
};

struct dk_field {
  const char *name;                   /**< logical name */
  const dk_type *type;
  int nullable;
  const char *metadata_json;          /**< the field's metadata object as compact JSON ("{}") */
  int64_t column_mapping_id;          /**< delta.columnMapping.id, or -1 */
  const char *physical_name;          /**< delta.columnMapping.physicalName, or the name */
};

typedef enum dk_column_mapping_mode {
  DK_COLUMN_MAPPING_NONE = 0,
  DK_COLUMN_MAPPING_ID,
  DK_COLUMN_MAPPING_NAME
} dk_column_mapping_mode;

/** Writes the Delta type name ("integer", "decimal(10,2)", "array<long>") into buf (always
 *  NUL-terminated when cap > 0); returns the length it needs (excluding the NUL). */
DK_API size_t dk_type_to_string(char *buf, size_t cap, const dk_type *t);
/** Looks up a top-level field by logical name (exact, then case-insensitive); NULL if absent. */
DK_API const dk_field *dk_schema_find(const dk_type *schema, const char *name);

/** A typed value (partition values). */
typedef struct dk_scalar {
  dk_type_id type;
  int is_null;
  int64_t i64;           /**< integers, boolean (0/1), date (days since epoch),
                              timestamp / timestamp_ntz (microseconds since epoch, UTC) */
  double f64;            /**< float (widened) and double */
  int64_t dec_hi;        /**< decimal: unscaled value as a two's-complement 128-bit integer */
  uint64_t dec_lo;
  const char *str;       /**< string / binary: borrowed from the parsed text */
  size_t len;
} dk_scalar;

/** Parses a partition value as written in the log ("2021-09-08 11:11:11", "1.5", "true")
 *  into a typed value of `type` (PROTOCOL.md "Partition Value Serialization"). NULL or ""
 *  text is a null. Timestamps without a zone are UTC.
 *  @return DK_OK, DK_CORRUPT (text does not match the type), DK_UNSUPPORTED (nested type). */
DK_API DK_WARN_UNUSED dk_status dk_partition_value_parse(dk_scalar *out, const dk_type *type, const char *text,
                                          dk_error *err);

DK_END_DECL

#endif /* DK_SCHEMA_H */
