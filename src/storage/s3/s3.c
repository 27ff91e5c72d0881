/*
** s3.c — the S3-compatible storage backend (dk_storage_s3_new of dk/sys/storage_s3.h): the
** dk_storage vtable (dk/sys/storage.h, version 2) over S3's REST API.
**
**   list_from      ListObjectsV2 (list-type=2, delimiter "/", encoding-type=url), page by
**                  page (continuation-token). start-after is exclusive and list_from wants
**                  names >= start_name, so it is sent as start_name less its last character
**                  and the few names before start_name are dropped here. Keys are listed in
**                  byte order; a "directory" (common prefix) sorts as its name + "/".
**                  A prefix with no key at all is DK_NOT_FOUND.
**   read           GET. read_range: GET with Range; a short answer or 416 is DK_CORRUPT.
**   read_ranges    ranges sorted and merged when closer than coalesce_gap (one GET serves
**                  several; the bytes between them are dropped), the merged GETs issued
**                  concurrently on one lane of the connection pool, each body scattered
**                  straight into the callers' buffers.
**   stat           HEAD; a key that is only a prefix of others is a directory (is_dir).
**   write          PUT up to part_size, else a multipart upload with parts sent concurrently.
**   put_if_absent  PUT with If-None-Match: * (412 -> DK_CONFLICT; 409 is retried). The Delta
**                  commit primitive (PROTOCOL.md "Delta Log Entries": mutual exclusion; see
**                  write-path §3.3). A 412 after a try whose outcome was unknown (a reset or
**                  500 after the body was sent) is resolved by reading the object back: our
**                  own bytes mean the earlier try won. Whether the server honours the header
**                  is checked once per backend (mode AUTO): a probe object is created next to
**                  the target, created again with the header (must be 412), and deleted.
**   remove         HEAD (DK_NOT_FOUND when absent: S3's DELETE does not tell) then DELETE.
**   open_write     parts of part_size buffered; a writer that never fills one commits with one
**                  PUT, else a multipart upload (CreateMultipartUpload on the first full part,
**                  UploadPart as parts fill, CompleteMultipartUpload — conditional when
**                  if_absent — at commit; AbortMultipartUpload on abort or any failure, so
**                  nothing is visible under the name).
**   map            NULL (not mappable).
** Paths are keys within the backend's bucket: s3_key below is the one place that maps them.
**
** Threads. The backend starts none: every request runs on the thread that calls it (a lane's
** curl multi handle, http.c, drives the concurrent GETs and upload parts of one call there).
** libcurl is initialised once per process, by the library: curl_global_init
** (CURL_GLOBAL_DEFAULT) under pthread_once when the first backend is made (http.c
** dk_s3__pool_new), never per call; it is never cleaned up (another user of libcurl in the
** process may still need it, and libcurl permits that). curl_global_init is itself
** thread-safe in libcurl >= 7.84 (CURL_VERSION_THREADSAFE, which Debian 12's 7.88 reports),
** so a host that also initialises libcurl on another thread does not race with dk.
** libcurl may start threads of its own: Debian's libcurl (7.88, OpenSSL, built without
** c-ares) resolves host names with its threaded resolver, one short-lived thread per name
** lookup that misses the lane's DNS cache (entries live 60 s, CURLOPT_DNS_CACHE_TIMEOUT), or
** per lookup of a proxy's name when one is configured. An endpoint given as an IP address
** needs none. The thread is joined when the lookup ends; one abandoned by a timeout or a
** cancel is detached and ends on its own. These threads are libcurl's, outside dk's executor
** (util/exec.h); libcurl has no run-time switch to turn them off (only a c-ares build, or
** addresses resolved by the caller and passed with CURLOPT_RESOLVE), and dk leaves them on.
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "storage/s3/s3.h"

typedef struct s3_backend {
  dk_storage pub;
  const dk_allocator *alloc;
  dk_s3__conf conf;
  dk_s3__pool *pool;
  dk_s3__stats_ctr stats;
  pthread_mutex_t probe_mu;
  int probe_state; /* 0 unknown, 1 conditional PUTs honoured, -1 not */
  char probe_msg[400];
} s3_backend;

static s3_backend *be(dk_storage *s) { return (s3_backend *)s->ctx; }

/* Backend path -> object key, the one place paths become keys. Both forms are accepted:
** "/tables/t/x" (a path within the backend's bucket) and "s3://bucket/tables/t/x" (a table
** root kept as a URI, any scheme: s3, s3a), whose bucket must be the backend's. The key is not
** percent-encoded here (http.c encodes it for the URL). */
static dk_status s3_key(s3_backend *b, const char *path, const char **key, dk_error *err) {
  const char *sep = strstr(path, "://");
  if (sep && path[0] != '/' && strchr(path, '/') == sep + 1) {
    const char *auth = sep + 3, *slash = strchr(auth, '/');
    size_t al = slash ? (size_t)(slash - auth) : strlen(auth);
    if (al != strlen(b->conf.bucket) || memcmp(auth, b->conf.bucket, al))
      return dk__error_set(err, DK_INVALID, "s3: '%s' is not in bucket '%s' of this backend",
                           path, b->conf.bucket);
    path = slash ? slash : "";
  }
  while (*path == '/') path++;
  *key = path;
  return DK_OK;
}

static void req_init(dk_s3__req *r, const char *method, const char *key) {
  memset(r, 0, sizeof *r);
  r->method = method;
  r->key = key;
  r->sink = DK_S3__TO_NONE;
}

static int ok2xx(const dk_s3__req *r) { return r->status >= 200 && r->status < 300; }

/* Runs one request; an HTTP answer that is not 2xx becomes the error for `op`. */
static dk_status run1(s3_backend *b, dk_s3__req *r, const char *op, dk_error *err) {
  DK_RETURN_NOT_OK(dk_s3__run(b->pool, &r, 1, err));
  if (!ok2xx(r) || r->xerr.code[0]) return dk_s3__status_error(b->pool, r, op, err);
  return DK_OK;
}

/* ---- list --------------------------------------------------------------------------------- */

typedef struct list_entry {
  char *key; /* in the page arena */
  int64_t size, mtime_ms;
  int is_dir;
} list_entry;

typedef struct list_page {
  dk_arena ar;
  dk_buf entries; /* list_entry[] */
  list_entry cur;
  int truncated, url_encoded;
  dk_buf token;
  size_t seen; /* Contents + CommonPrefixes in this page */
  dk_error *err;
} list_page;

static dk_status on_list_elem(void *ctx, const char *path, const char *text, size_t len) {
  list_page *pg = ctx;
  if (strncmp(path, "ListBucketResult/", 17)) return DK_OK;
  const char *p = path + 17;
  if (!strcmp(p, "Contents/Key") || !strcmp(p, "CommonPrefixes/Prefix")) {
    pg->cur.key = dk__arena_strndup(&pg->ar, text, len, pg->err);
    if (!pg->cur.key) return DK_NOMEM;
  } else if (!strcmp(p, "Contents/Size")) {
    pg->cur.size = strtoll(text, NULL, 10);
  } else if (!strcmp(p, "Contents/LastModified")) {
    pg->cur.mtime_ms = dk_s3__parse_iso8601_ms(text);
  } else if (!strcmp(p, "Contents") || !strcmp(p, "CommonPrefixes")) {
    pg->cur.is_dir = p[0] == 'C' && p[1] == 'o' && p[2] == 'm';
    pg->seen++;
    if (pg->cur.key) DK_RETURN_NOT_OK(dk__buf_append(&pg->entries, &pg->cur, sizeof pg->cur, pg->err));
    memset(&pg->cur, 0, sizeof pg->cur);
  } else if (!strcmp(p, "IsTruncated")) {
    pg->truncated = len == 4 && !strncmp(text, "true", 4);
  } else if (!strcmp(p, "NextContinuationToken")) {
    dk__buf_clear(&pg->token);
    DK_RETURN_NOT_OK(dk__buf_append(&pg->token, text, len, pg->err));
  } else if (!strcmp(p, "EncodingType")) {
    pg->url_encoded = len == 3 && !strncmp(text, "url", 3);
  }
  return DK_OK;
}

static int cmp_entries(const void *a, const void *b) {
  return strcmp(((const list_entry *)a)->key, ((const list_entry *)b)->key);
}

/* GET ?list-type=2 of one page into pg (entries sorted, keys decoded). */
static dk_status list_page_get(s3_backend *b, const char *prefix, const char *start_after,
                               const char *token, int max_keys, list_page *pg, dk_error *err) {
  const dk_allocator *al = b->alloc;
  dk_buf q, body;
  dk__buf_init(&q, al);
  dk__buf_init(&body, al);
  dk_status st = DK_OK;
  /* parameters in SigV4 canonical (sorted) order */
  if (token) {
    DK_CHECK_GOTO(dk__buf_puts(&q, "continuation-token=", err));
    DK_CHECK_GOTO(dk_s3__uri_encode(&q, token, strlen(token), 0, err));
    DK_CHECK_GOTO(dk__buf_putc(&q, '&', err));
  }
  DK_CHECK_GOTO(dk__buf_puts(&q, "delimiter=%2F&encoding-type=url&list-type=2", err));
  if (max_keys > 0) DK_CHECK_GOTO(dk__buf_printf(&q, err, "&max-keys=%d", max_keys));
  DK_CHECK_GOTO(dk__buf_puts(&q, "&prefix=", err));
  DK_CHECK_GOTO(dk_s3__uri_encode(&q, prefix, strlen(prefix), 0, err));
  if (start_after && *start_after && !token) {
    DK_CHECK_GOTO(dk__buf_puts(&q, "&start-after=", err));
    DK_CHECK_GOTO(dk_s3__uri_encode(&q, start_after, strlen(start_after), 0, err));
  }
  dk_s3__req r;
  req_init(&r, "GET", NULL);
  r.query = q.data;
  r.sink = DK_S3__TO_BUF;
  r.out = &body;
  r.out_limit = (size_t)256 << 20;
  st = dk_s3__run(b->pool, (dk_s3__req *[]){&r}, 1, err);
  if (st == DK_OK && (!ok2xx(&r) || r.xerr.code[0])) {
    r.key = prefix;
    st = dk_s3__status_error(b->pool, &r, "LIST", err);
  }
  if (st != DK_OK) goto cleanup;
  dk__buf_clear(&pg->entries);
  dk__buf_clear(&pg->token);
  pg->truncated = pg->url_encoded = 0;
  pg->seen = 0;
  memset(&pg->cur, 0, sizeof pg->cur);
  DK_CHECK_GOTO(dk_s3__xml_parse(body.data ? body.data : "", body.len, on_list_elem, pg, al, err));
  list_entry *v = (list_entry *)(void *)pg->entries.data;
  size_t n = pg->entries.len / sizeof *v;
  if (pg->url_encoded)
    for (size_t i = 0; i < n; i++) dk__pct_decode_into(v[i].key, v[i].key, strlen(v[i].key), DK__PCT_PLUS_SPACE);
  if (n > 1) qsort(v, n, sizeof *v, cmp_entries);
  if (pg->truncated && !pg->token.len)
    st = dk__error_set(err, DK_CORRUPT, "s3 LIST s3://%s/%s: a truncated page without "
                                        "NextContinuationToken", b->conf.bucket, prefix);
cleanup:
  dk__buf_dispose(&q);
  dk__buf_dispose(&body);
  return st;
}

static dk_status s3_list_from(dk_storage *s, const char *dir, const char *start_name,
                              dk_list_cb cb, void *payload, dk_error *err) {
  s3_backend *b = be(s);
  const dk_allocator *al = b->alloc;
  size_t dlen = strlen(dir);
  while (dlen > 0 && dir[dlen - 1] == '/') dlen--;
  dk_buf prefix, start_after, path;
  dk__buf_init(&prefix, al);
  dk__buf_init(&start_after, al);
  dk__buf_init(&path, al);
  list_page pg;
  memset(&pg, 0, sizeof pg);
  dk__arena_init(&pg.ar, al, 0);
  dk__buf_init(&pg.entries, al);
  dk__buf_init(&pg.token, al);
  pg.err = err;
  dk_status st = DK_OK;
  const char *k;
  DK_CHECK_GOTO(s3_key(b, dir, &k, err));
  size_t klen = (size_t)((dir + dlen) - k);
  if (dir + dlen < k) klen = 0;
  DK_CHECK_GOTO(dk__buf_append(&prefix, k, klen, err));
  if (klen) DK_CHECK_GOTO(dk__buf_putc(&prefix, '/', err));
  if (prefix.data == NULL) DK_CHECK_GOTO(dk__buf_reserve(&prefix, 1, err));
  if (start_name && *start_name) {
    DK_CHECK_GOTO(dk__buf_append(&start_after, prefix.data, prefix.len, err));
    DK_CHECK_GOTO(dk_s3__start_after(&start_after, start_name, err));
    if (start_after.len == prefix.len) dk__buf_clear(&start_after); /* one-character name */
  }
  size_t total_seen = 0;
  for (int first = 1;; first = 0) {
    char *tok = first ? NULL : dk__strndup(al, pg.token.data, pg.token.len);
    if (!first && !tok) DK_CHECK_GOTO(dk__error_set(err, DK_NOMEM, "out of memory"));
    dk__arena_reset(&pg.ar);
    st = list_page_get(b, prefix.data, start_after.data, tok, b->conf.list_page_size, &pg, err);
    dk__free(al, tok);
    if (st != DK_OK) goto cleanup;
    total_seen += pg.seen;
    list_entry *v = (list_entry *)(void *)pg.entries.data;
    size_t n = pg.entries.len / sizeof *v;
    for (size_t i = 0; i < n; i++) {
      if (strncmp(v[i].key, prefix.data, prefix.len)) continue; /* not ours (defensive) */
      char *name = v[i].key + prefix.len;
      size_t nl = strlen(name);
      if (v[i].is_dir && nl && name[nl - 1] == '/') name[--nl] = 0;
      if (!nl) continue; /* the "directory marker" object "prefix/" itself */
      if (start_name && strcmp(name, start_name) < 0) continue;
      dk__buf_clear(&path);
      DK_CHECK_GOTO(dk__buf_append(&path, dir, dlen, err));
      DK_CHECK_GOTO(dk__buf_putc(&path, '/', err));
      DK_CHECK_GOTO(dk__buf_append(&path, name, nl, err));
      dk_file_info info = {.path = path.data,
                           .size = v[i].is_dir ? 0 : v[i].size,
                           .mtime_ms = v[i].is_dir ? 0 : v[i].mtime_ms,
                           .is_dir = v[i].is_dir};
      st = cb(&info, payload);
      if (st != DK_OK) goto cleanup;
    }
    if (!pg.truncated) break;
  }
  if (total_seen == 0) {
    /* nothing at or after start_name: is there anything under the prefix at all? */
    if (start_after.len) {
      st = list_page_get(b, prefix.data, NULL, NULL, 1, &pg, err);
      if (st != DK_OK) goto cleanup;
      total_seen = pg.seen;
    }
    if (total_seen == 0)
      st = dk__error_set(err, DK_NOT_FOUND, "list s3://%s/%s: no such directory (no key starts "
                                            "with '%s')", b->conf.bucket, prefix.data, prefix.data);
  }
cleanup:
  dk__buf_dispose(&prefix);
  dk__buf_dispose(&start_after);
  dk__buf_dispose(&path);
  dk__buf_dispose(&pg.entries);
  dk__buf_dispose(&pg.token);
  dk__arena_dispose(&pg.ar);
  return st;
}

/* ---- read --------------------------------------------------------------------------------- */

static dk_status s3_read(dk_storage *s, const char *path, uint8_t **out, size_t *len,
                         dk_error *err) {
  s3_backend *b = be(s);
  *out = NULL;
  *len = 0;
  dk_buf body;
  dk__buf_init(&body, b->alloc);
  const char *key;
  DK_RETURN_NOT_OK(s3_key(b, path, &key, err));
  dk_s3__req r;
  req_init(&r, "GET", key);
  r.sink = DK_S3__TO_BUF;
  r.out = &body;
  dk_status st = run1(b, &r, "GET", err);
  if (st == DK_OK && !body.data) st = dk__buf_reserve(&body, 1, err);
  if (st != DK_OK) {
    dk__buf_dispose(&body);
    return st;
  }
  *len = body.len;
  *out = (uint8_t *)dk__buf_detach(&body); /* NUL-terminated, as the local backend's */
  return DK_OK;
}

static dk_status short_range(s3_backend *b, const char *key, const dk_s3__req *r,
                             dk_error *err) {
  int64_t end = r->range_total >= 0 ? r->range_total : r->range_start + r->received;
  return dk__error_set(err, DK_CORRUPT,
                       "read s3://%s/%s: file ends at byte %lld, inside the range [%lld, %lld)",
                       b->conf.bucket, key, (long long)end, (long long)r->range_start,
                       (long long)(r->range_start + r->range_len));
}

/* Judges a finished ranged GET. */
static dk_status range_result(s3_backend *b, const dk_s3__req *r, dk_error *err) {
  if (r->status == 416) return short_range(b, r->key, r, err);
  if (!ok2xx(r)) return dk_s3__status_error(b->pool, r, "GET", err);
  if (r->received < r->range_len) return short_range(b, r->key, r, err);
  return DK_OK;
}

static dk_status s3_read_range(dk_storage *s, const char *path, int64_t offset, void *buf,
                               size_t len, dk_error *err) {
  s3_backend *b = be(s);
  const char *key;
  DK_RETURN_NOT_OK(s3_key(b, path, &key, err));
  DK_RETURN_IF(offset < 0, DK_INVALID, err, "read s3://%s/%s: negative offset %lld",
               b->conf.bucket, key, (long long)offset);
  DK_RETURN_IF(len > (size_t)INT64_MAX - (size_t)offset, DK_INVALID, err,
               "read s3://%s/%s: range overflows", b->conf.bucket, key);
  if (len == 0) return DK_OK;
  dk_s3__span span = {offset, len, buf};
  dk_s3__req r;
  req_init(&r, "GET", key);
  r.sink = DK_S3__TO_RANGES;
  r.range_start = offset;
  r.range_len = (int64_t)len;
  r.spans = &span;
  r.nspans = 1;
  DK_RETURN_NOT_OK(dk_s3__run(b->pool, (dk_s3__req *[]){&r}, 1, err));
  return range_result(b, &r, err);
}

static int cmp_span(const void *a, const void *b) {
  const dk_s3__span *x = a, *y = b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static dk_status s3_read_ranges(dk_storage *s, const char *path, const dk_byte_range *ranges,
                                size_t n, dk_error *err) {
  s3_backend *b = be(s);
  const dk_allocator *al = b->alloc;
  const char *key;
  DK_RETURN_NOT_OK(s3_key(b, path, &key, err));
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    DK_RETURN_IF(ranges[i].offset < 0 || ranges[i].len > (size_t)INT64_MAX - (size_t)ranges[i].offset,
                 DK_INVALID, err, "read s3://%s/%s: bad range [%lld, +%zu)", b->conf.bucket, key,
                 (long long)ranges[i].offset, ranges[i].len);
    if (ranges[i].len) m++;
  }
  if (m == 0) return DK_OK;
  dk_s3__span *spans = dk__malloc(al, m * sizeof *spans);
  dk_s3__req *reqs = dk__calloc(al, m, sizeof *reqs);
  dk_s3__req **rp = dk__calloc(al, m, sizeof *rp);
  dk_status st = DK_OK;
  if (!spans || !reqs || !rp) DK_CHECK_GOTO(dk__error_set(err, DK_NOMEM, "out of memory"));
  m = 0;
  for (size_t i = 0; i < n; i++)
    if (ranges[i].len) spans[m++] = (dk_s3__span){ranges[i].offset, ranges[i].len, ranges[i].buf};
  qsort(spans, m, sizeof *spans, cmp_span);
  /* merge neighbours closer than coalesce_gap, up to 4 parts' worth per GET */
  const int64_t gap = (int64_t)b->conf.coalesce_gap, cap = (int64_t)b->conf.part_size * 4;
  size_t ng = 0;
  for (size_t i = 0; i < m;) {
    int64_t start = spans[i].offset, end = start + (int64_t)spans[i].len;
    size_t j = i + 1;
    while (j < m && spans[j].offset < end + gap &&
           DK_MAX(end, spans[j].offset + (int64_t)spans[j].len) - start <= DK_MAX(cap, end - start)) {
      end = DK_MAX(end, spans[j].offset + (int64_t)spans[j].len);
      j++;
    }
    dk_s3__req *r = &reqs[ng];
    req_init(r, "GET", key);
    r->sink = DK_S3__TO_RANGES;
    r->range_start = start;
    r->range_len = end - start;
    r->spans = &spans[i];
    r->nspans = j - i;
    rp[ng++] = r;
    i = j;
  }
  DK_CHECK_GOTO(dk_s3__run(b->pool, rp, ng, err));
  for (size_t g = 0; g < ng; g++) DK_CHECK_GOTO(range_result(b, &reqs[g], err));
cleanup:
  dk__free(al, spans);
  dk__free(al, reqs);
  dk__free(al, rp);
  return st;
}

/* ---- stat --------------------------------------------------------------------------------- */

static dk_status s3_stat(dk_storage *s, const char *path, dk_file_info *out, dk_error *err) {
  s3_backend *b = be(s);
  const char *key;
  DK_RETURN_NOT_OK(s3_key(b, path, &key, err));
  memset(out, 0, sizeof *out);
  out->path = path;
  dk_s3__req r;
  if (*key) {
    req_init(&r, "HEAD", key);
    DK_RETURN_NOT_OK(dk_s3__run(b->pool, (dk_s3__req *[]){&r}, 1, err));
    if (ok2xx(&r)) {
      out->size = r.content_length >= 0 ? r.content_length : 0;
      out->mtime_ms = r.mtime_ms >= 0 ? r.mtime_ms : 0;
      return DK_OK;
    }
    if (r.status != 404) return dk_s3__status_error(b->pool, &r, "HEAD", err);
  }
  /* a "directory": some key starts with key + "/" (the bucket itself for the root) */
  list_page pg;
  memset(&pg, 0, sizeof pg);
  dk__arena_init(&pg.ar, b->alloc, 0);
  dk__buf_init(&pg.entries, b->alloc);
  dk__buf_init(&pg.token, b->alloc);
  pg.err = err;
  dk_buf prefix;
  dk__buf_init(&prefix, b->alloc);
  dk_status st = dk__buf_puts(&prefix, key, err);
  if (st == DK_OK && *key) st = dk__buf_putc(&prefix, '/', err);
  if (st == DK_OK && !prefix.data) st = dk__buf_reserve(&prefix, 1, err);
  if (st == DK_OK) st = list_page_get(b, prefix.data, NULL, NULL, 1, &pg, err);
  if (st == DK_OK) {
    if (pg.seen || !*key) out->is_dir = 1;
    else st = dk__error_set(err, DK_NOT_FOUND, "stat s3://%s/%s: no such key", b->conf.bucket, key);
  }
  dk__buf_dispose(&prefix);
  dk__buf_dispose(&pg.entries);
  dk__buf_dispose(&pg.token);
  dk__arena_dispose(&pg.ar);
  return st;
}

/* ---- write -------------------------------------------------------------------------------- */

static dk_status put_object(s3_backend *b, const char *key, const void *data, size_t len,
                            int if_absent, dk_s3__req *r, dk_error *err) {
  req_init(r, "PUT", key);
  r->body = data;
  r->body_len = len;
  r->if_none_match = if_absent ? "*" : NULL;
  return dk_s3__run(b->pool, (dk_s3__req *[]){r}, 1, err);
}

/* Whether the object under key holds exactly data (resolves an ambiguous conditional PUT). */
static dk_status same_bytes(s3_backend *b, const char *key, const void *data, size_t len,
                            int *same, dk_error *err) {
  uint8_t *cur = NULL;
  size_t n = 0;
  dk_buf path;
  dk__buf_init(&path, b->alloc);
  dk_status st = dk__buf_printf(&path, err, "/%s", key);
  if (st == DK_OK) st = s3_read(&b->pub, path.data, &cur, &n, err);
  dk__buf_dispose(&path);
  DK_RETURN_NOT_OK(st);
  *same = n == len && (len == 0 || !memcmp(cur, data, len));
  dk__free(b->alloc, cur);
  return DK_OK;
}

static dk_status delete_key(s3_backend *b, const char *key, dk_error *err) {
  dk_s3__req r;
  req_init(&r, "DELETE", key);
  return run1(b, &r, "DELETE", err);
}

/* Checks once per backend that conditional PUTs are honoured (mode AUTO). */
static dk_status check_conditional(s3_backend *b, const char *key, dk_error *err) {
  if (b->conf.put_if_absent != DK_S3_PUT_IF_ABSENT_AUTO) return DK_OK;
  pthread_mutex_lock(&b->probe_mu);
  dk_status st = DK_OK;
  if (b->probe_state == 0) {
    static unsigned long counter;
    char probe[1200];
    const char *slash = strrchr(key, '/');
    int dl = slash ? (int)(slash - key) + 1 : 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(probe, sizeof probe, "%.*s.dk-put-if-absent-probe-%ld-%lld%09ld-%lu", dl, key,
             (long)getpid(), (long long)ts.tv_sec, ts.tv_nsec,
             __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    static const char body[] = "dk: checks that this server honours If-None-Match: *\n";
    dk_s3__req r;
    st = put_object(b, probe, body, sizeof body - 1, 1, &r, err);
    if (st == DK_OK && !ok2xx(&r) && r.status != 412) {
      if (r.status == 501 || r.status == 400) {
        b->probe_state = -1;
        snprintf(b->probe_msg, sizeof b->probe_msg, "it answered a conditional PUT with HTTP %ld %s",
                 r.status, r.xerr.code);
      } else {
        st = dk_s3__status_error(b->pool, &r, "PUT (conditional-put check)", err);
      }
    }
    if (st == DK_OK && b->probe_state == 0) {
      st = put_object(b, probe, body, sizeof body - 1, 1, &r, err);
      if (st == DK_OK) {
        if (r.status == 412) b->probe_state = 1;
        else if (ok2xx(&r)) {
          b->probe_state = -1;
          snprintf(b->probe_msg, sizeof b->probe_msg,
                   "a second conditional PUT of s3://%s/%s replaced the object (HTTP %ld)",
                   b->conf.bucket, probe, r.status);
        } else if (r.status == 501 || r.status == 400) {
          b->probe_state = -1;
          snprintf(b->probe_msg, sizeof b->probe_msg,
                   "it answered a conditional PUT with HTTP %ld %s", r.status, r.xerr.code);
        } else {
          st = dk_s3__status_error(b->pool, &r, "PUT (conditional-put check)", err);
        }
      }
    }
    dk_error ignored = {0};
    (void)delete_key(b, probe, &ignored);
  }
  if (st == DK_OK && b->probe_state < 0)
    st = dk__error_set(err, DK_UNSUPPORTED,
                       "s3 put-if-absent s3://%s/%s: the server at %s://%s does not honour "
                       "conditional PUTs (If-None-Match: *): %s. Concurrent writers could "
                       "replace each other's commits. Set aws_s3_allow_unsafe_rename=true (or "
                       "dk_s3_put_if_absent=unsafe) to write anyway, only when a single writer "
                       "uses the table",
                       b->conf.bucket, key, b->conf.scheme, b->conf.host, b->probe_msg);
  pthread_mutex_unlock(&b->probe_mu);
  return st;
}

static dk_status exists(s3_backend *b, const char *key, int *yes, dk_error *err) {
  dk_s3__req r;
  req_init(&r, "HEAD", key);
  DK_RETURN_NOT_OK(dk_s3__run(b->pool, (dk_s3__req *[]){&r}, 1, err));
  if (r.status == 404) return *yes = 0, DK_OK;
  if (!ok2xx(&r)) return dk_s3__status_error(b->pool, &r, "HEAD", err);
  *yes = 1;
  return DK_OK;
}

static dk_status conflict(s3_backend *b, const char *key, dk_error *err) {
  return dk__error_set(err, DK_CONFLICT, "put-if-absent s3://%s/%s: the object already exists",
                       b->conf.bucket, key);
}

/* One PUT of a whole object, conditional when if_absent. */
static dk_status put_whole(s3_backend *b, const char *key, const void *data, size_t len,
                           int if_absent, dk_error *err) {
  if (if_absent && b->conf.put_if_absent == DK_S3_PUT_IF_ABSENT_UNSAFE) {
    int there;
    DK_RETURN_NOT_OK(exists(b, key, &there, err));
    if (there) return conflict(b, key, err);
    if_absent = 0;
  } else if (if_absent) {
    DK_RETURN_NOT_OK(check_conditional(b, key, err));
  }
  dk_s3__req r;
  DK_RETURN_NOT_OK(put_object(b, key, data, len, if_absent, &r, err));
  if (ok2xx(&r)) return DK_OK;
  if (r.status == 412 && if_absent) {
    if (r.ambiguous) { /* did an earlier try of ours create it? */
      int same = 0;
      DK_RETURN_NOT_OK(same_bytes(b, key, data, len, &same, err));
      if (same) return DK_OK;
    }
    return conflict(b, key, err);
  }
  return dk_s3__status_error(b->pool, &r, if_absent ? "PUT (if absent)" : "PUT", err);
}

/* ---- multipart ---------------------------------------------------------------------------- */

typedef struct upload {
  s3_backend *b;
  char *key;
  char *id;          /* UploadId */
  char *id_enc;      /* percent-encoded */
  dk_buf parts;      /* <Part> elements of CompleteMultipartUpload */
  int nparts;
} upload;

static dk_status on_upload_id(void *ctx, const char *path, const char *text, size_t len) {
  upload *u = ctx;
  if (!strcmp(path, "InitiateMultipartUploadResult/UploadId") && !u->id) {
    u->id = dk__strndup(u->b->alloc, text, len);
    if (!u->id) return DK_NOMEM;
  }
  return DK_OK;
}

static dk_status upload_begin(upload *u, s3_backend *b, const char *key, dk_error *err) {
  memset(u, 0, sizeof *u);
  u->b = b;
  dk__buf_init(&u->parts, b->alloc);
  u->key = dk__strdup(b->alloc, key);
  DK_RETURN_IF(!u->key, DK_NOMEM, err, "out of memory");
  dk_buf body, enc;
  dk__buf_init(&body, b->alloc);
  dk__buf_init(&enc, b->alloc);
  dk_s3__req r;
  req_init(&r, "POST", key);
  r.query = "uploads=";
  r.sink = DK_S3__TO_BUF;
  r.out = &body;
  r.out_limit = 1 << 20;
  dk_status st = run1(b, &r, "POST (CreateMultipartUpload)", err);
  if (st == DK_OK) st = dk_s3__xml_parse(body.data ? body.data : "", body.len, on_upload_id, u, b->alloc, err);
  if (st == DK_OK && !u->id)
    st = dk__error_set(err, DK_CORRUPT, "s3 CreateMultipartUpload s3://%s/%s: no UploadId in "
                                        "the answer", b->conf.bucket, key);
  if (st == DK_OK) st = dk_s3__uri_encode(&enc, u->id, strlen(u->id), 0, err);
  if (st == DK_OK) u->id_enc = dk__buf_detach(&enc);
  dk__buf_dispose(&body);
  dk__buf_dispose(&enc);
  return st;
}

/* Uploads parts [first, first+n) of data (part_size each, the last may be shorter),
** concurrently, numbering them from u->nparts + 1. */
static dk_status upload_parts(upload *u, const char *data, size_t len, dk_error *err) {
  s3_backend *b = u->b;
  size_t ps = b->conf.part_size, n = (len + ps - 1) / ps;
  if (n == 0) return DK_OK;
  DK_RETURN_IF(u->nparts + (int64_t)n > 10000, DK_INVALID, err,
               "s3 upload s3://%s/%s: more than S3's 10000 parts of %zu bytes (raise "
               "dk_s3_part_size)", b->conf.bucket, u->key, ps);
  dk_s3__req *reqs = dk__calloc(b->alloc, n, sizeof *reqs);
  dk_s3__req **rp = dk__calloc(b->alloc, n, sizeof *rp);
  char (*queries)[400] = dk__calloc(b->alloc, n, sizeof *queries);
  dk_status st = DK_OK;
  if (!reqs || !rp || !queries) DK_CHECK_GOTO(dk__error_set(err, DK_NOMEM, "out of memory"));
  for (size_t i = 0; i < n; i++) {
    int pn = u->nparts + 1 + (int)i;
    if (snprintf(queries[i], sizeof queries[i], "partNumber=%d&uploadId=%s", pn, u->id_enc) >=
        (int)sizeof queries[i])
      DK_CHECK_GOTO(dk__error_set(err, DK_INVALID, "s3: UploadId too long"));
    req_init(&reqs[i], "PUT", u->key);
    reqs[i].query = queries[i];
    reqs[i].body = data + i * ps;
    reqs[i].body_len = DK_MIN(ps, len - i * ps);
    rp[i] = &reqs[i];
  }
  DK_CHECK_GOTO(dk_s3__run(b->pool, rp, n, err));
  for (size_t i = 0; i < n; i++) {
    if (!ok2xx(&reqs[i])) DK_CHECK_GOTO(dk_s3__status_error(b->pool, &reqs[i], "PUT (UploadPart)", err));
    if (!reqs[i].etag[0])
      DK_CHECK_GOTO(dk__error_set(err, DK_CORRUPT, "s3 UploadPart s3://%s/%s: no ETag in the answer",
                                  b->conf.bucket, u->key));
    DK_CHECK_GOTO(dk__buf_printf(&u->parts, err, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>",
                                 u->nparts + 1 + (int)i, reqs[i].etag));
  }
  u->nparts += (int)n;
cleanup:
  dk__free(b->alloc, reqs);
  dk__free(b->alloc, rp);
  dk__free(b->alloc, queries);
  return st;
}

static void upload_dispose(upload *u) {
  const dk_allocator *al = u->b ? u->b->alloc : NULL;
  dk__free(al, u->key);
  dk__free(al, u->id);
  dk__free(al, u->id_enc);
  dk__buf_dispose(&u->parts);
  memset(u, 0, sizeof *u);
}

static void upload_abort(upload *u) {
  if (u->id) {
    char q[400];
    snprintf(q, sizeof q, "uploadId=%s", u->id_enc);
    dk_s3__req r;
    req_init(&r, "DELETE", u->key);
    r.query = q;
    dk_error ignored = {0};
    (void)dk_s3__run(u->b->pool, (dk_s3__req *[]){&r}, 1, &ignored);
  }
  upload_dispose(u);
}

/* Whether the upload still exists (ListParts); a completed one does not. */
static dk_status upload_alive(upload *u, int *alive, dk_error *err) {
  char q[400];
  snprintf(q, sizeof q, "max-parts=1&uploadId=%s", u->id_enc);
  dk_s3__req r;
  req_init(&r, "GET", u->key);
  r.query = q;
  DK_RETURN_NOT_OK(dk_s3__run(u->b->pool, (dk_s3__req *[]){&r}, 1, err));
  if (r.status == 404) return *alive = 0, DK_OK;
  if (!ok2xx(&r)) return dk_s3__status_error(u->b->pool, &r, "GET (ListParts)", err);
  *alive = 1;
  return DK_OK;
}

/* CompleteMultipartUpload; aborts the upload unless it succeeded. Frees u. */
static dk_status upload_complete(upload *u, int if_absent, dk_error *err) {
  s3_backend *b = u->b;
  dk_buf body, resp;
  dk__buf_init(&body, b->alloc);
  dk__buf_init(&resp, b->alloc);
  char q[400];
  snprintf(q, sizeof q, "uploadId=%s", u->id_enc);
  dk_status st = dk__buf_printf(&body, err, "<CompleteMultipartUpload>%s</CompleteMultipartUpload>",
                                u->parts.data ? u->parts.data : "");
  dk_s3__req r;
  req_init(&r, "POST", u->key);
  r.query = q;
  r.body = body.data;
  r.body_len = body.len;
  r.content_type = "application/xml";
  r.if_none_match = if_absent ? "*" : NULL;
  r.sink = DK_S3__TO_BUF;
  r.out = &resp;
  r.out_limit = 1 << 20;
  int done = 0;
  if (st == DK_OK) st = dk_s3__run(b->pool, (dk_s3__req *[]){&r}, 1, err);
  if (st == DK_OK) {
    if (ok2xx(&r) && !r.xerr.code[0]) {
      done = 1;
    } else if (r.ambiguous && (r.status == 412 || r.status == 404)) {
      int alive = 1; /* an earlier try may have completed it: then the upload is gone */
      st = upload_alive(u, &alive, err);
      if (st == DK_OK && !alive) done = 1;
      else if (st == DK_OK) st = r.status == 412 ? conflict(b, u->key, err)
                                                 : dk_s3__status_error(b->pool, &r, "POST (CompleteMultipartUpload)", err);
    } else if (r.status == 412 && if_absent) {
      st = conflict(b, u->key, err);
    } else {
      st = dk_s3__status_error(b->pool, &r, "POST (CompleteMultipartUpload)", err);
    }
  }
  dk__buf_dispose(&body);
  dk__buf_dispose(&resp);
  if (done) upload_dispose(u);
  else upload_abort(u);
  return st;
}

static dk_status write_multipart(s3_backend *b, const char *key, const void *data, size_t len,
                                 int if_absent, dk_error *err) {
  upload u;
  dk_status st = upload_begin(&u, b, key, err);
  if (st == DK_OK) st = upload_parts(&u, data, len, err);
  if (st != DK_OK) {
    upload_abort(&u);
    return st;
  }
  return upload_complete(&u, if_absent, err);
}

static dk_status s3_write(dk_storage *s, const char *path, const void *data, size_t len,
                          dk_error *err) {
  s3_backend *b = be(s);
  const char *key;
  DK_RETURN_NOT_OK(s3_key(b, path, &key, err));
  if (len <= b->conf.part_size) return put_whole(b, key, data, len, 0, err);
  return write_multipart(b, key, data, len, 0, err);
}

static dk_status s3_put_if_absent(dk_storage *s, const char *path, const void *data, size_t len,
                                  dk_error *err) {
  s3_backend *b = be(s);
  const char *key;
  DK_RETURN_NOT_OK(s3_key(b, path, &key, err));
  return put_whole(b, key, data, len, 1, err);
}

static dk_status s3_remove(dk_storage *s, const char *path, dk_error *err) {
  s3_backend *b = be(s);
  const char *key;
  DK_RETURN_NOT_OK(s3_key(b, path, &key, err));
  int there;
  DK_RETURN_NOT_OK(exists(b, key, &there, err));
  DK_RETURN_IF(!there, DK_NOT_FOUND, err, "remove s3://%s/%s: no such key", b->conf.bucket, key);
  return delete_key(b, key, err);
}

/* ---- streamed writer ------------------------------------------------------------------------ */

typedef struct s3_writer {
  dk_storage_writer pub;
  s3_backend *b;
  char *key;
  dk_buf buf;      /* bytes not yet sent: less than one part */
  upload up;       /* up.id != NULL once the multipart upload exists */
  dk_status failed;
} s3_writer;

static void writer_free(s3_writer *w) {
  const dk_allocator *al = w->b->alloc;
  dk__buf_dispose(&w->buf);
  dk__free(al, w->key);
  dk__free(al, w);
}

static dk_status w_flush_parts(s3_writer *w, const char *p, size_t n, dk_error *err) {
  if (!w->up.id) DK_RETURN_NOT_OK(upload_begin(&w->up, w->b, w->key, err));
  return upload_parts(&w->up, p, n, err);
}

static dk_status w_write(dk_storage_writer *pw, const void *data, size_t len, dk_error *err) {
  s3_writer *w = pw->ctx;
  if (w->failed) return dk__error_set(err, w->failed, "write s3://%s/%s: the writer failed before",
                                      w->b->conf.bucket, w->key);
  const char *p = data;
  size_t ps = w->b->conf.part_size;
  dk_status st = DK_OK;
  while (len > 0 && st == DK_OK) {
    if (w->buf.len == 0 && len >= ps) { /* whole parts straight from the caller's bytes */
      size_t whole = len / ps * ps;
      st = w_flush_parts(w, p, whole, err);
      p += whole;
      len -= whole;
      continue;
    }
    size_t take = DK_MIN(len, ps - w->buf.len);
    st = dk__buf_append(&w->buf, p, take, err);
    p += take;
    len -= take;
    if (st == DK_OK && w->buf.len == ps) {
      st = w_flush_parts(w, w->buf.data, ps, err);
      dk__buf_clear(&w->buf);
    }
  }
  if (st != DK_OK) w->failed = st;
  return st;
}

static void w_abort(dk_storage_writer *pw) {
  if (!pw) return;
  s3_writer *w = pw->ctx;
  if (w->up.b) upload_abort(&w->up);
  writer_free(w);
}

static dk_status w_commit(dk_storage_writer *pw, int if_absent, dk_error *err) {
  s3_writer *w = pw->ctx;
  s3_backend *b = w->b;
  dk_status st = w->failed;
  if (st != DK_OK) {
    dk__error_set(err, st, "commit s3://%s/%s: the writer failed before", b->conf.bucket, w->key);
    w_abort(pw);
    return st;
  }
  if (!w->up.id) {
    st = put_whole(b, w->key, w->buf.data ? w->buf.data : "", w->buf.len, if_absent, err);
    if (w->up.b) upload_dispose(&w->up);
    writer_free(w);
    return st;
  }
  if (if_absent && b->conf.put_if_absent == DK_S3_PUT_IF_ABSENT_UNSAFE) {
    int there = 0;
    st = exists(b, w->key, &there, err);
    if (st == DK_OK && there) st = conflict(b, w->key, err);
    if_absent = 0;
  } else if (if_absent) {
    st = check_conditional(b, w->key, err);
  }
  if (st == DK_OK && w->buf.len) st = upload_parts(&w->up, w->buf.data, w->buf.len, err);
  if (st == DK_OK) st = upload_complete(&w->up, if_absent, err);
  else upload_abort(&w->up);
  writer_free(w);
  return st;
}

static dk_status s3_open_write(dk_storage *s, const char *path, dk_storage_writer **out,
                               dk_error *err) {
  s3_backend *b = be(s);
  *out = NULL;
  const char *key;
  DK_RETURN_NOT_OK(s3_key(b, path, &key, err));
  s3_writer *w = dk__calloc(b->alloc, 1, sizeof *w);
  DK_RETURN_IF(!w, DK_NOMEM, err, "out of memory");
  w->b = b;
  w->key = dk__strdup(b->alloc, key);
  dk__buf_init(&w->buf, b->alloc);
  if (!w->key) {
    dk__free(b->alloc, w);
    return dk__error_set(err, DK_NOMEM, "out of memory");
  }
  w->pub.ctx = w;
  w->pub.write = w_write;
  w->pub.commit = w_commit;
  w->pub.abort = w_abort;
  *out = &w->pub;
  return DK_OK;
}

/* ---- the backend -------------------------------------------------------------------------- */

static void s3_free_buf(dk_storage *s, void *p) { dk__free(be(s)->alloc, p); }

static void s3_free(dk_storage *s) {
  if (!s) return;
  s3_backend *b = be(s);
  const dk_allocator *al = b->alloc;
  dk_s3__pool_free(b->pool);
  dk_s3__conf_dispose(&b->conf, al);
  pthread_mutex_destroy(&b->probe_mu);
  dk__free(al, b);
}

dk_status dk_storage_s3_new(dk_storage **out, const dk_s3_options *opts,
                            const dk_allocator *alloc, dk_error *err) {
  DK_RETURN_IF(!out, DK_INVALID, err, "dk_storage_s3_new: out is NULL");
  *out = NULL;
  s3_backend *b = dk__calloc(alloc, 1, sizeof *b);
  DK_RETURN_IF(!b, DK_NOMEM, err, "out of memory");
  b->alloc = alloc;
  dk_status st = dk_s3__conf_resolve(&b->conf, opts, alloc, err);
  if (st == DK_OK) st = dk_s3__pool_new(&b->pool, &b->conf, alloc, &b->stats, err);
  if (st != DK_OK) {
    dk_s3__conf_dispose(&b->conf, alloc);
    dk__free(alloc, b);
    return st;
  }
  pthread_mutex_init(&b->probe_mu, NULL);
  if (b->conf.put_if_absent == DK_S3_PUT_IF_ABSENT_TRUST) b->probe_state = 1;
  dk_storage *s = &b->pub;
  s->version = DK_STORAGE_VERSION;
  s->ctx = b;
  s->list_from = s3_list_from;
  s->read = s3_read;
  s->read_range = s3_read_range;
  s->stat = s3_stat;
  s->write = s3_write;
  s->put_if_absent = s3_put_if_absent;
  s->remove = s3_remove;
  s->free_buf = s3_free_buf;
  s->free = s3_free;
  s->open_write = s3_open_write;
  s->read_ranges = s3_read_ranges;
  s->map = NULL;
  s->unmap = NULL;
  *out = s;
  return DK_OK;
}

dk_status dk_storage_s3_stats(dk_storage *s, dk_s3_stats *out, dk_error *err) {
  DK_RETURN_IF(!s || !out || s->free != s3_free, DK_INVALID, err,
               "dk_storage_s3_stats: not an S3 backend");
  DK_RETURN_IF(out->version == 0 || out->version > DK_S3_STATS_VERSION, DK_INVALID, err,
               "dk_storage_s3_stats: version %u is not supported", out->version);
  const dk_s3__stats_ctr *c = &be(s)->stats;
  out->requests = __atomic_load_n(&c->requests, __ATOMIC_RELAXED);
  out->retries = __atomic_load_n(&c->retries, __ATOMIC_RELAXED);
  out->get_requests = __atomic_load_n(&c->get_requests, __ATOMIC_RELAXED);
  out->bytes_received = __atomic_load_n(&c->bytes_received, __ATOMIC_RELAXED);
  out->bytes_sent = __atomic_load_n(&c->bytes_sent, __ATOMIC_RELAXED);
  return DK_OK;
}
