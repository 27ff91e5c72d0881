/*
** actions.h — Delta log actions as typed structs that parse from and serialize to the JSON
** lines of a commit (src/protocol/actions.c; not API). Log replay reads commits through the
** parser; commit ranges hand the parsed actions out; writers build these structs and
** serialize them.
**
** Structs are views: dk_str fields borrow the parsed JSON (or the writer's memory) and need
** not be NUL-terminated; dk_metadata / dk_protocol (dk/snapshot.h) describe metaData and
** protocol. A dk_str with ptr == NULL is absent.
**
** Follows PROTOCOL.md "Actions" (Change Metadata, Protocol Evolution, Add File and Remove
** File, Add CDC File, Transaction Identifiers, Domain Metadata, Commit Provenance
** Information, Sidecar File Information, Checkpoint Metadata) and "Deletion Vectors"
** (deletionVector descriptor).
*/
#ifndef DK_PROTOCOL_ACTIONS_H
#define DK_PROTOCOL_ACTIONS_H

#include "codec/json/json.h"
#include "dk/history.h"
#include "dk/snapshot.h"
#include "util/util.h"

/* add — also what replay takes from a checkpoint's Parquet columns. */
typedef struct dk__add {
  dk_str path;               /* as written (URL-encoded) */
  size_t n_pv;
  const dk_str *pv;          /* 2*n_pv: key, value (value.ptr NULL = null) */
  int64_t size, mtime;
  int data_change;
  dk_str stats;              /* ptr NULL = none */
  dk_str tags_json;          /* the tags object as JSON text; ptr NULL = none */
  int has_dv;
  char dv_type;
  dk_str dv_path;
  int32_t dv_offset, dv_size; /* offset -1 = absent */
  int64_t dv_card;
  int64_t dv_max_row_index;  /* -1 = absent */
  int has_brid, has_drcv;
  int64_t brid, drcv;
  dk_str clustering_provider; /* ptr NULL = none */
} dk__add;

/* remove (with the extended file metadata delta-spark writes). */
typedef struct dk__remove {
  dk_str path;                   /* as written (URL-encoded) */
  const dk_dv_descriptor *dv;    /* NULL = none; path_or_inline_dv NUL-terminated, borrowed */
  int64_t dv_max_row_index;      /* -1 = absent */
  int64_t deletion_timestamp;    /* -1 = absent */
  int data_change;
  int extended_file_metadata;    /* -1 = absent, else 0 / 1 */
  int has_pv;                    /* partitionValues present (may be empty) */
  size_t n_pv;
  const dk_str *pv;
  int64_t size;                  /* -1 = absent */
  dk_str stats, tags_json;       /* ptr NULL = none */
  int has_brid, has_drcv;
  int64_t brid, drcv;
} dk__remove;

/* cdc */
typedef struct dk__cdc {
  dk_str path;
  size_t n_pv;
  const dk_str *pv;
  int64_t size;
  dk_str tags_json;
  int data_change;               /* false by the protocol */
} dk__cdc;

typedef struct dk__txn_action {
  dk_str app_id;
  int64_t version;
  int64_t last_updated;          /* -1 = absent */
} dk__txn_action;

typedef struct dk__domain_action {
  dk_str domain;
  dk_str configuration;
  int removed;
} dk__domain_action;

/* commitInfo is free-form: kept as its JSON object text, with the fields dk reads. */
typedef struct dk__commit_info {
  dk_str json;                   /* the object, compact */
  int64_t timestamp;             /* -1 = absent */
  int64_t in_commit_timestamp;   /* -1 = absent */
  dk_str operation;              /* ptr NULL = absent */
} dk__commit_info;

typedef struct dk__checkpoint_metadata {
  int64_t version;
  dk_str tags_json;
} dk__checkpoint_metadata;

typedef struct dk__sidecar {
  dk_str path;                   /* as written (relative to _delta_log/_sidecars, or a URI) */
  int64_t size_in_bytes, modification_time;
  dk_str tags_json;
} dk__sidecar;

typedef struct dk__action {
  dk_action_kind kind;           /* DK_ACTION_UNKNOWN: an action dk does not know (ignored) */
  dk_str name;                   /* the action's key ("add", ...) */
  union {
    dk__add add;
    dk__remove remove;
    dk__cdc cdc;
    dk_metadata metadata;        /* strings NUL-terminated, arrays in the parse arena */
    dk_protocol protocol;
    dk__txn_action txn;
    dk__domain_action domain;
    dk__commit_info commit_info;
    dk__checkpoint_metadata checkpoint_metadata;
    dk__sidecar sidecar;
  } u;
} dk__action;

/* The kind an action key names (DK_ACTION_UNKNOWN for others). */
dk_action_kind dk_protocol__action_kind(const char *key, size_t len);

/* Parses the body `v` of action `key` (one member of a log line). Views borrow `v`'s
 * strings; arrays (partition values, dv, features, configuration) and rendered JSON text
 * (tags, commitInfo) are allocated in `ar`. DK_CORRUPT for a body that is not an object or
 * a required field missing or of the wrong type (the message names the action and field). */
dk_status dk_protocol__action_parse(dk__action *out, const char *key, const dk_json_value *v,
                                    dk_arena *ar, dk_error *err);

/* Appends the action as one log line, {"<name>":{...}} and a newline, with fields in the
 * order and form delta-spark's JSON writer gives them (absent optional fields left out;
 * add and cdc always carry partitionValues). DK_INVALID for a struct that cannot be
 * written (unknown kind, invalid UTF-8). */
dk_status dk_protocol__action_write(dk_buf *b, const dk__action *a, dk_error *err);

#endif /* DK_PROTOCOL_ACTIONS_H */
