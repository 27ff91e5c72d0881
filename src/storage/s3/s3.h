/*
** s3.h — internals of the S3 backend (src/storage/s3/), not API.
**
**   config.c  options -> dk_s3__conf: environment, shared config/credentials files, defaults.
**   http.c    the connection pool (lanes of curl multi handles), signed requests, retries with
**             backoff, response capture, error messages.
**   xml.c     the S3 XML documents read with expat (ListObjectsV2, Error, multipart results).
**   s3.c      the dk_storage vtable over them; the one place paths become keys (s3__key).
**
** libcurl and expat are used in this folder only.
*/
#ifndef DK_STORAGE_S3_H
#define DK_STORAGE_S3_H

#include <pthread.h>

#include "dk/sys/storage_s3.h"
#include "util/util.h"

/* ---- resolved settings (config.c) ------------------------------------------------------ */

typedef struct dk_s3__conf {
  char *bucket;
  char *region;
  char *scheme;             /* "https" or "http" */
  char *host;               /* host[:port] of the endpoint, without the bucket */
  char *base_path;          /* endpoint path prefix without trailing '/', usually "" */
  int virtual_hosted;       /* 1: bucket.host/key, 0: host/bucket/key */
  char *access_key_id;      /* NULL: anonymous */
  char *secret_access_key;
  char *session_token;      /* NULL unless temporary credentials */
  char *cred_source;        /* where the credentials came from (for error messages) */
  int put_if_absent;        /* dk_s3_put_if_absent */
  int max_retries;
  int64_t retry_timeout_ms, connect_timeout_ms, stall_timeout_ms, request_timeout_ms;
  int max_connections;
  size_t part_size;
  size_t coalesce_gap;
  int list_page_size;
  int (*cancel)(void *ctx);
  void *cancel_ctx;
} dk_s3__conf;

/* Resolves options, environment (unless skip_env) and shared files into c (strings owned by
** c, allocated with alloc). */
dk_status dk_s3__conf_resolve(dk_s3__conf *c, const dk_s3_options *o, const dk_allocator *alloc,
                              dk_error *err);
void dk_s3__conf_dispose(dk_s3__conf *c, const dk_allocator *alloc);

/* The value of `key` in section `section` of an INI-style AWS file's text ("default",
** "profile x"); NULL when absent. *found_section tells whether the section exists. The
** returned string is allocated (dk__free). */
char *dk_s3__ini_get(const char *text, const char *section, const char *key, int *found_section,
                     const dk_allocator *alloc);

/* ---- encoding --------------------------------------------------------------------------- */

/* Appends s percent-encoded as SigV4 wants it: unreserved A-Za-z0-9-._~ kept, '/' kept when
** keep_slash, every other byte %XX (upper-case hex). */
dk_status dk_s3__uri_encode(dk_buf *b, const char *s, size_t n, int keep_slash, dk_error *err);
/* Milliseconds since the epoch of an ISO 8601 "2024-01-02T03:04:05.678Z"; -1 when malformed. */
int64_t dk_s3__parse_iso8601_ms(const char *s);
/* The exclusive ListObjectsV2 start-after key for "names >= start": start without its last
** UTF-8 character (every key >= start is > it). Appended to b. */
dk_status dk_s3__start_after(dk_buf *b, const char *start, dk_error *err);

/* ---- XML (xml.c) ------------------------------------------------------------------------ */

/* Called at the end of each element with its slash-joined path from the root
** ("ListBucketResult/Contents/Key") and its own text (NUL-terminated, entities decoded; ""
** for an element holding only children). A status other than DK_OK stops the parse and is
** returned. */
typedef dk_status (*dk_s3__xml_cb)(void *ctx, const char *path, const char *text, size_t len);
dk_status dk_s3__xml_parse(const char *doc, size_t len, dk_s3__xml_cb cb, void *ctx,
                           const dk_allocator *alloc, dk_error *err);

/* The S3 error document's fields (empty strings when absent). */
typedef struct dk_s3__xml_error {
  char code[64];
  char message[256];
  char request_id[80];
} dk_s3__xml_error;
/* Fills e from an <Error> document; returns 1 when it was one. */
int dk_s3__xml_error_parse(const char *doc, size_t len, dk_s3__xml_error *e,
                           const dk_allocator *alloc);

/* ---- HTTP (http.c) ---------------------------------------------------------------------- */

typedef struct dk_s3__pool dk_s3__pool;

typedef struct dk_s3__stats_ctr {
  int64_t requests, retries, get_requests, bytes_received, bytes_sent;
} dk_s3__stats_ctr;

/* Where a response body goes. */
typedef enum { DK_S3__TO_BUF = 0, DK_S3__TO_RANGES, DK_S3__TO_NONE } dk_s3__sink_kind;

/* A destination span inside a ranged GET: bytes [offset, offset+len) of the object. */
typedef struct dk_s3__span {
  int64_t offset;
  size_t len;
  char *buf;
} dk_s3__span;

/* One request and its outcome. Filled by the caller up to "response", then run. */
typedef struct dk_s3__req {
  const char *method;        /* GET HEAD PUT POST DELETE */
  const char *key;           /* object key (unencoded), NULL or "" for the bucket */
  const char *query;         /* canonical query string (sorted, encoded), or NULL */
  const char *if_none_match; /* "*" for a conditional create, or NULL */
  int64_t range_start;       /* with range_len > 0: Range: bytes=start-(start+len-1) */
  int64_t range_len;
  const void *body;          /* request body (PUT/POST), may be NULL */
  size_t body_len;
  const char *content_type;  /* of the body, or NULL */
  dk_s3__sink_kind sink;
  dk_buf *out;               /* DK_S3__TO_BUF: 2xx body appended here (reset per try) */
  size_t out_limit;          /* DK_S3__TO_BUF: 0 = none */
  dk_s3__span *spans;        /* DK_S3__TO_RANGES: sorted by offset, inside the range */
  size_t nspans;
  /* ---- response (set by dk_s3__run) ---- */
  long status;               /* HTTP status of the last try (0: no response) */
  int64_t content_length;    /* -1 when absent */
  int64_t mtime_ms;          /* Last-Modified, -1 when absent */
  int64_t range_total;       /* object size from Content-Range, -1 when absent */
  int64_t received;          /* body bytes of the last try delivered to the sink */
  char etag[128];
  int ambiguous;             /* an earlier try may have taken effect on the server */
  int tries;
  dk_s3__xml_error xerr;     /* parsed error document of the last non-2xx response */
  /* private to http.c */
  void *priv;
} dk_s3__req;

/* Creates the pool (connections per lane: conf->max_connections). */
dk_status dk_s3__pool_new(dk_s3__pool **out, const dk_s3__conf *conf, const dk_allocator *alloc,
                          dk_s3__stats_ctr *stats, dk_error *err);
void dk_s3__pool_free(dk_s3__pool *p);

/* Runs n requests concurrently on one lane (n <= conf->max_connections), each with its
** retries. Returns DK_OK when every request got an HTTP response (any status: the caller
** judges it with dk_s3__status_error), else the first transport error (connection refused,
** timeout, cancellation) after retries, with err naming the request. `retry_status` says which
** non-2xx statuses are retried: the default set (500, 502, 503, 504, 429, 408, and 400
** RequestTimeout) when NULL. */
dk_status dk_s3__run(dk_s3__pool *p, dk_s3__req **reqs, size_t n, dk_error *err);

/* The error for a finished request whose status is not 2xx: the operation, s3://bucket/key,
** the status, S3's error code and message, and a hint for credential and bucket errors.
** 404 is DK_NOT_FOUND, 412 DK_CONFLICT, 416 DK_CORRUPT, anything else DK_IO. */
dk_status dk_s3__status_error(const dk_s3__pool *p, const dk_s3__req *r, const char *op,
                              dk_error *err);

/* Milliseconds sleep in slices, polling the cancel hook; DK_CANCELLED when asked to stop. */
dk_status dk_s3__sleep_ms(const dk_s3__conf *c, int64_t ms, dk_error *err);

#endif /* DK_STORAGE_S3_H */
