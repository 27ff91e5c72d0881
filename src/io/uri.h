/*
** uri.h — percent-coding, URI splitting, table roots and the resolution of a path found in the
** log to (backend, key). Not API. The one place that knows what a location string means;
** log file names built on top of it live in log/paths.h.
**
** Forms of a location (RFC 3986 / RFC 8089 for file URIs):
**   plain path     "/abs/dir", "rel/dir"         a local path (no scheme)
**   file URI       "file:///abs", "file:/abs", "file://localhost/abs"   a local path, %-encoded
**   other URI      "s3://bucket/prefix", "s3a://…", "abfss://…"  kept whole: scheme, authority, path
** A string has a scheme when it starts with ALPHA *(ALPHA / DIGIT / "+" / "-" / ".") ":" of two
** or more characters and either the scheme is "file" or "//" follows; anything else ("a:b",
** "C:\x") is a plain path.
**
** Keys handed to a dk_storage: the local form "/abs/dir/file" for local roots, and
** "scheme://authority/path" with the path NOT percent-encoded (the object's key as stored) for
** any other scheme (see dk/sys/storage.h).
*/
#ifndef DK_IO_URI_H
#define DK_IO_URI_H

#include "dk/sys/storage.h"
#include "util/util.h"

/* ---- percent-coding ---------------------------------------------------------------------- */

/* Appends s[0..n) with %XX escapes decoded (util.h dk__pct_decode_into; flags DK__PCT_*).
** Lenient mode never fails but on memory. */
dk_status dk__pct_decode(dk_buf *out, const char *s, size_t n, int flags, dk_error *err);
/* Appends s[0..n) with every byte that is not unreserved or one of "/!$&'()*+,;=:@" encoded as
** %XX (uppercase hex), so that dk__pct_decode gives s back. */
dk_status dk__pct_encode(dk_buf *out, const char *s, size_t n, dk_error *err);

/* ---- URI splitting ----------------------------------------------------------------------- */

typedef struct dk__uri {
  dk_str scheme;    /* without ':'; len 0 for a plain path */
  dk_str authority; /* between "//" and the next '/'; ptr NULL when there is no "//" */
  dk_str path;      /* the rest, as written (still encoded in a URI) */
} dk__uri;

/* Splits s[0..n) (see the banner); returns whether it has a scheme. Never fails. */
bool dk__uri_split(dk__uri *out, const char *s, size_t n);
/* Case-insensitive comparison of a scheme with a lowercase name. */
bool dk__scheme_is(dk_str scheme, const char *lower);

/* ---- table roots ------------------------------------------------------------------------- */

/* Where a table lives and the backend that reaches it. */
typedef struct dk__root {
  const char *uri;      /* canonical root, no trailing '/': "/abs/dir" (local, possibly relative
                           when a caller's backend was given a relative path) or
                           "scheme://authority/decoded/path" (scheme lowercased) */
  size_t len;           /* strlen(uri) */
  size_t scheme_len;    /* 0 for a local root */
  dk_storage *sto;      /* the backend serving the root's scheme */
  int confine;          /* path confinement (dk_table_options.confine_paths): dk_io__resolve
                           refuses a key outside the root (or outside rel_dir below it) */
} dk__root;

/* Canonical root string of a table URI given by a user (see dk__root.uri), allocated with a
** into *out. file URIs become local paths (percent-decoded); file://host/… is DK_UNSUPPORTED;
** an empty string is DK_INVALID. *scheme_len receives the scheme's length (0: local). */
dk_status dk_io__root_canonical(char **out, size_t *scheme_len, const char *uri,
                                const dk_allocator *a, dk_error *err);
/* Fills r from a canonical root string (borrowed: it must outlive r) and its backend;
** confinement off (set r->confine after). */
void dk_io__root_init(dk__root *r, const char *canonical_uri, dk_storage *sto);
/* The root's scheme ("" when local). */
static inline dk_str dk_io__root_scheme(const dk__root *r) {
  return (dk_str){r->uri, r->scheme_len};
}

/* Appends root + "/" + a (+ "/" + b when b is not NULL) to key; a root of "/" adds no second
** slash. */
dk_status dk_io__join(dk_buf *key, const char *root, const char *a, const char *b,
                      dk_error *err);

/* A resolved location: which backend, and its key there. */
typedef struct dk__loc {
  dk_storage *sto;      /* the backend that serves the key */
  bool under_root;      /* the key lies inside the table root (no ".." segment leaves it) */
} dk__loc;

/* Resolves a *decoded* path as the log stores it (dk__file.path: relative to the root, an
** absolute local path, or a URI) to a key, written into key (cleared first). A scheme-less
** absolute path is a local file, also in a table on an object store (DK_UNSUPPORTED there). A path relative
** to a directory below the root (sidecars) passes that directory in `rel_dir` ("" or NULL for
** the root itself). A URI whose scheme the root's backend does not serve, or a file URI
** naming another host, is DK_UNSUPPORTED naming the scheme. A control byte (below 0x20, or
** 0x7f) in the path is DK_CORRUPT. With r->confine, a key outside the root, or outside rel_dir
** below it when rel_dir is given (sidecars), is DK_UNSUPPORTED ("outside the table root"):
** "..", absolute paths and URIs elsewhere; absolute paths inside the root stay allowed. */
dk_status dk_io__resolve(dk__loc *out, dk_buf *key, const dk__root *r, const char *rel_dir,
                         const char *path, size_t n, dk_error *err);
/* The same for a %-encoded path as written in the log (add.path, sidecar.path): decoded
** first (leniently, as log replay decodes). */
dk_status dk_io__resolve_encoded(dk__loc *out, dk_buf *key, const dk__root *r,
                                 const char *rel_dir, const char *path, size_t n,
                                 dk_error *err);
/* Appends the URI of a key (as _metadata.file_path shows it): "file://" + encoded path for a
** local key, "scheme://authority" + encoded path otherwise. */
dk_status dk_io__key_uri(dk_buf *out, const char *key, dk_error *err);

/* DK_CORRUPT when s[0..n) holds a control byte (below 0x20, or 0x7f: a decoded %00..%1F or
** a JSON \u0000): a path is corrupt input then, never a shorter path. `what` names the path's
** role in the message. */
dk_status dk_io__check_path_bytes(const char *s, size_t n, const char *what, dk_error *err);

/* ---- backends ---------------------------------------------------------------------------- */

/* Checks a caller's backend before dk adopts it: version >= 1 and the version-1 operations
** dk needs for reading present. `what` names the adopter in the message. */
dk_status dk_io__storage_check(const dk_storage *s, const char *what, dk_error *err);
/* Whether a version-2 operation may be called (the backend is version 2 or newer and set it). */
#define DK_IO_HAS_V2(s, op) ((s)->version >= 2 && (s)->op != NULL)

#endif /* DK_IO_URI_H */
