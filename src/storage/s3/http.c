/*
** http.c — the S3 backend's HTTP layer over libcurl: a pool of connections, signed requests,
** retries, response capture and error messages.
**
** Pool. libcurl may not share one connection cache between threads (CURLSHOPT_SHARE's
** CURL_LOCK_DATA_CONNECT "is not supported between concurrent threads"), so the pool is a
** stack of lanes: a lane is one curl multi handle (whose connection cache keeps HTTP/1.1
** keep-alive connections open between requests) with up to max_connections easy handles.
** A call takes a free lane (or makes one), runs its requests on it concurrently, and puts it
** back: each lane is used by one thread at a time, and a backend used by T threads at once
** ends up with T lanes.
**
** Signing. CURLOPT_AWS_SIGV4 ("aws:amz:<region>:s3") signs every request: curl 7.88 signs
** the method, the path and query exactly as given in the URL (so we send both already in
** SigV4's canonical form: keys percent-encoded per RFC 3986 with '/' kept, query parameters
** sorted, each written name=value), the host and every header we pass, among them
** x-amz-content-sha256 (curl takes the payload hash from it: UNSIGNED-PAYLOAD for bodies,
** the empty string's hash otherwise) and x-amz-security-token for session credentials. No
** header without a value is ever passed (curl would sign a header it does not send).
**
** Retries (per request, inside the concurrent loop): transport errors (connect, reset, stall,
** truncated body), 500/502/503/504/429/408, 400 RequestTimeout, 409 on a conditional PUT
** (ConditionalRequestConflict), and an <Error> inside a 200 answer to a POST (S3's
** CompleteMultipartUpload), with exponential backoff and equal jitter (100 ms doubling to
** 5 s), at most max_retries times and never starting after retry_timeout. A ranged GET that
** broke off resumes at the first byte not yet delivered. A request with side effects whose
** try may have reached the server (a reset or timeout after sending, a 500) marks the request
** `ambiguous`, which put-if-absent uses to tell its own earlier success from a rival's object.
** Timeouts: connect, stall (CURLOPT_LOW_SPEED_*: no byte for stall_timeout) and an optional
** whole-request one; the cancel hook is polled by curl's progress callback and between tries.
*/
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "storage/s3/s3.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define ERRBODY_MAX (64u << 10)

typedef struct lane {
  CURLM *multi;
  CURL **easy;     /* max_connections, created on first use */
  struct lane *next;
} lane;

struct dk_s3__pool {
  const dk_s3__conf *conf;
  const dk_allocator *alloc;
  dk_s3__stats_ctr *stats;
  pthread_mutex_t mu;
  lane *idle;
  char sigv4[200];
  uint64_t seed;
};

/* libcurl's process-wide set-up, once, from the first pool made (see s3.c "Threads") */
static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_init_rc;
static void curl_init_once(void) { g_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void stat_add(int64_t *p, int64_t v) { __atomic_add_fetch(p, v, __ATOMIC_RELAXED); }

dk_status dk_s3__pool_new(dk_s3__pool **out, const dk_s3__conf *conf, const dk_allocator *alloc,
                          dk_s3__stats_ctr *stats, dk_error *err) {
  *out = NULL;
  pthread_once(&g_curl_once, curl_init_once);
  DK_RETURN_IF(g_curl_init_rc != CURLE_OK, DK_IO, err, "s3: curl_global_init failed: %s",
               curl_easy_strerror(g_curl_init_rc));
  dk_s3__pool *p = dk__calloc(alloc, 1, sizeof *p);
  DK_RETURN_IF(!p, DK_NOMEM, err, "out of memory");
  p->conf = conf;
  p->alloc = alloc;
  p->stats = stats;
  pthread_mutex_init(&p->mu, NULL);
  snprintf(p->sigv4, sizeof p->sigv4, "aws:amz:%s:s3", conf->region);
  p->seed = (uint64_t)now_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)p;
  *out = p;
  return DK_OK;
}

static void lane_free(const dk_s3__pool *p, lane *l) {
  for (int i = 0; i < p->conf->max_connections; i++)
    if (l->easy[i]) curl_easy_cleanup(l->easy[i]);
  if (l->multi) curl_multi_cleanup(l->multi);
  dk__free(p->alloc, l->easy);
  dk__free(p->alloc, l);
}

void dk_s3__pool_free(dk_s3__pool *p) {
  if (!p) return;
  for (lane *l = p->idle, *n; l; l = n) {
    n = l->next;
    lane_free(p, l);
  }
  pthread_mutex_destroy(&p->mu);
  dk__free(p->alloc, p);
}

static lane *lane_acquire(dk_s3__pool *p) {
  pthread_mutex_lock(&p->mu);
  lane *l = p->idle;
  if (l) p->idle = l->next;
  pthread_mutex_unlock(&p->mu);
  if (l) return l;
  l = dk__calloc(p->alloc, 1, sizeof *l);
  if (!l) return NULL;
  l->easy = dk__calloc(p->alloc, (size_t)p->conf->max_connections, sizeof *l->easy);
  l->multi = curl_multi_init();
  if (!l->easy || !l->multi) {
    if (l->multi) curl_multi_cleanup(l->multi);
    dk__free(p->alloc, l->easy);
    dk__free(p->alloc, l);
    return NULL;
  }
  curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS, (long)p->conf->max_connections);
  return l;
}

static void lane_release(dk_s3__pool *p, lane *l) {
  pthread_mutex_lock(&p->mu);
  l->next = p->idle;
  p->idle = l;
  pthread_mutex_unlock(&p->mu);
}

/* ---- one transfer ------------------------------------------------------------------------ */

typedef enum { X_QUEUED = 0, X_RUNNING, X_WAITING, X_DONE } xstate;

typedef struct xfer {
  dk_s3__pool *p;
  dk_s3__req *r;
  CURL *e;
  int slot;                  /* index of e in the lane, -1 when none */
  xstate state;
  int64_t wake_ms;           /* X_WAITING: when to try again */
  int64_t first_ms;
  dk_buf url;
  struct curl_slist *hdrs;
  char errbuf[CURL_ERROR_SIZE];
  /* per try */
  int status_known;
  long status;
  int to_err;                /* body goes to errbody */
  dk_buf errbody;
  size_t out_base;           /* out->len before the first try */
  size_t upload_pos;
  int64_t skip;              /* body bytes to drop (a 200 answer to a ranged GET) */
  size_t span_first;
  dk_status sink_st;         /* the write callback refused the body */
  char sink_msg[300];
  /* across tries */
  int64_t delivered;         /* ranged GET: bytes of the range delivered so far */
  dk_status result;
  char result_msg[600];
} xfer;

static size_t on_header(char *buf, size_t sz, size_t nm, void *ud) {
  xfer *x = ud;
  dk_s3__req *r = x->r;
  size_t n = sz * nm;
  if (n >= 5 && !memcmp(buf, "HTTP/", 5)) { /* a new response (after 100 Continue, too) */
    r->content_length = -1;
    r->mtime_ms = -1;
    r->range_total = -1;
    r->etag[0] = 0;
    return n;
  }
  const char *colon = memchr(buf, ':', n);
  if (!colon) return n;
  size_t kl = (size_t)(colon - buf);
  const char *v = colon + 1, *end = buf + n;
  while (v < end && (*v == ' ' || *v == '\t')) v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
  char val[256];
  size_t vl = DK_MIN((size_t)(end - v), sizeof val - 1);
  memcpy(val, v, vl);
  val[vl] = 0;
  if (kl == 14 && !strncasecmp(buf, "content-length", 14)) {
    r->content_length = strtoll(val, NULL, 10);
  } else if (kl == 13 && !strncasecmp(buf, "last-modified", 13)) {
    time_t t = curl_getdate(val, NULL);
    r->mtime_ms = t == (time_t)-1 ? -1 : (int64_t)t * 1000;
  } else if (kl == 4 && !strncasecmp(buf, "etag", 4)) {
    snprintf(r->etag, sizeof r->etag, "%s", val);
  } else if (kl == 13 && !strncasecmp(buf, "content-range", 13)) {
    const char *slash = strchr(val, '/');
    if (slash && slash[1] != '*') r->range_total = strtoll(slash + 1, NULL, 10);
  }
  return n;
}

static void first_body_byte(xfer *x) {
  dk_s3__req *r = x->r;
  x->status_known = 1;
  curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &x->status);
  x->to_err = x->status < 200 || x->status >= 300;
  if (!x->to_err && r->range_len > 0 && x->status == 200) /* Range ignored: whole object */
    x->skip = r->range_start + x->delivered;
}

static size_t refuse(xfer *x, dk_status st, const char *fmt, ...) DK_PRINTF(3, 4);
static size_t refuse(xfer *x, dk_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->sink_msg, sizeof x->sink_msg, fmt, ap);
  va_end(ap);
  x->sink_st = st;
  return 0; /* curl stops with CURLE_WRITE_ERROR */
}

static size_t on_body(char *data, size_t sz, size_t nm, void *ud) {
  xfer *x = ud;
  dk_s3__req *r = x->r;
  size_t n = sz * nm, total = n;
  if (!x->status_known) first_body_byte(x);
  stat_add(&x->p->stats->bytes_received, (int64_t)n);
  if (x->to_err) {
    size_t room = x->errbody.len < ERRBODY_MAX ? ERRBODY_MAX - x->errbody.len : 0;
    if (room && dk__buf_append(&x->errbody, data, DK_MIN(room, n), NULL) != DK_OK)
      return refuse(x, DK_NOMEM, "out of memory");
    return total;
  }
  if (x->skip > 0) {
    size_t drop = (size_t)DK_MIN((int64_t)n, x->skip);
    x->skip -= (int64_t)drop;
    data += drop;
    n -= drop;
    if (!n) return total;
  }
  switch (r->sink) {
    case DK_S3__TO_BUF:
      if (r->out_limit && r->out->len - x->out_base + n > r->out_limit)
        return refuse(x, DK_CORRUPT, "response larger than %zu bytes", r->out_limit);
      if (dk__buf_append(r->out, data, n, NULL) != DK_OK)
        return refuse(x, DK_NOMEM, "out of memory (%zu bytes)", r->out->len + n);
      r->received += (int64_t)n;
      return total;
    case DK_S3__TO_RANGES: {
      if (r->range_len > 0 && x->delivered + (int64_t)n > r->range_len) {
        if (x->status == 200) n = (size_t)(r->range_len - x->delivered); /* rest of a whole body */
        else return refuse(x, DK_CORRUPT, "server sent more than the %lld bytes asked for",
                           (long long)r->range_len);
      }
      int64_t pos = r->range_start + x->delivered, end = pos + (int64_t)n;
      while (x->span_first < r->nspans &&
             r->spans[x->span_first].offset + (int64_t)r->spans[x->span_first].len <= pos)
        x->span_first++;
      for (size_t i = x->span_first; i < r->nspans && r->spans[i].offset < end; i++) {
        dk_s3__span *s = &r->spans[i];
        int64_t a = DK_MAX(pos, s->offset), b = DK_MIN(end, s->offset + (int64_t)s->len);
        if (a < b) memcpy(s->buf + (a - s->offset), data + (a - pos), (size_t)(b - a));
      }
      x->delivered += (int64_t)n;
      r->received = x->delivered;
      return total;
    }
    case DK_S3__TO_NONE:
      return total;
  }
  return total;
}

static size_t on_read(char *buf, size_t sz, size_t nm, void *ud) {
  xfer *x = ud;
  size_t room = sz * nm, left = x->r->body_len - x->upload_pos;
  size_t n = DK_MIN(room, left);
  if (n) memcpy(buf, (const char *)x->r->body + x->upload_pos, n);
  x->upload_pos += n;
  stat_add(&x->p->stats->bytes_sent, (int64_t)n);
  return n;
}

static int on_seek(void *ud, curl_off_t off, int origin) {
  xfer *x = ud;
  if (origin != SEEK_SET || off < 0 || (size_t)off > x->r->body_len) return CURL_SEEKFUNC_FAIL;
  x->upload_pos = (size_t)off;
  return CURL_SEEKFUNC_OK;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
  (void)a, (void)b, (void)c, (void)d;
  xfer *x = ud;
  const dk_s3__conf *cf = x->p->conf;
  return cf->cancel && cf->cancel(cf->cancel_ctx) ? 1 : 0;
}

static dk_status build_url(xfer *x, dk_error *err) {
  const dk_s3__conf *c = x->p->conf;
  dk_s3__req *r = x->r;
  dk_buf *u = &x->url;
  if (c->virtual_hosted)
    DK_RETURN_NOT_OK(dk__buf_printf(u, err, "%s://%s.%s%s/", c->scheme, c->bucket, c->host, c->base_path));
  else
    DK_RETURN_NOT_OK(dk__buf_printf(u, err, "%s://%s%s/%s%s", c->scheme, c->host, c->base_path,
                                    c->bucket, r->key && *r->key ? "/" : ""));
  if (r->key && *r->key) DK_RETURN_NOT_OK(dk_s3__uri_encode(u, r->key, strlen(r->key), 1, err));
  if (r->query && *r->query) DK_RETURN_NOT_OK(dk__buf_printf(u, err, "?%s", r->query));
  return DK_OK;
}

/* Sets e up for the next try of x. */
static dk_status setup_try(xfer *x, dk_error *err) {
  const dk_s3__conf *c = x->p->conf;
  dk_s3__req *r = x->r;
  CURL *e = x->e;
  curl_easy_reset(e);
  curl_slist_free_all(x->hdrs);
  x->hdrs = NULL;
  x->status_known = 0;
  x->status = 0;
  x->to_err = 0;
  dk__buf_clear(&x->errbody);
  x->upload_pos = 0;
  x->skip = 0;
  x->span_first = 0;
  x->sink_st = DK_OK;
  x->errbuf[0] = 0;
  r->status = 0;
  r->content_length = r->mtime_ms = r->range_total = -1;
  r->etag[0] = 0;
  memset(&r->xerr, 0, sizeof r->xerr);
  if (r->sink == DK_S3__TO_BUF) {
    r->out->len = x->out_base;
    if (r->out->data) r->out->data[r->out->len] = 0;
    r->received = 0;
  }
  char h[512];
  struct curl_slist *l = NULL;
#define ADD_HEADER(...)                                            \
  do {                                                             \
    snprintf(h, sizeof h, __VA_ARGS__);                            \
    struct curl_slist *nl = curl_slist_append(l, h);               \
    if (!nl) goto nomem;                                           \
    l = nl;                                                        \
  } while (0)
  int has_body = !strcmp(r->method, "PUT") || !strcmp(r->method, "POST");
  ADD_HEADER("x-amz-content-sha256: %s", has_body ? "UNSIGNED-PAYLOAD" : EMPTY_SHA256);
  if (c->session_token) {
    struct curl_slist *nl = NULL;
    dk_buf t;
    dk__buf_init(&t, x->p->alloc);
    if (dk__buf_printf(&t, NULL, "x-amz-security-token: %s", c->session_token) == DK_OK)
      nl = curl_slist_append(l, t.data);
    dk__buf_dispose(&t);
    if (!nl) goto nomem;
    l = nl;
  }
  if (r->if_none_match) ADD_HEADER("If-None-Match: %s", r->if_none_match);
  if (r->range_len > 0)
    ADD_HEADER("Range: bytes=%lld-%lld", (long long)(r->range_start + x->delivered),
               (long long)(r->range_start + r->range_len - 1));
  if (r->content_type) ADD_HEADER("Content-Type: %s", r->content_type);
#undef ADD_HEADER
  x->hdrs = l;
  curl_easy_setopt(e, CURLOPT_URL, x->url.data);
  curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)x);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)DK_MAX(1, (c->stall_timeout_ms + 999) / 1000));
  if (c->request_timeout_ms) curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->request_timeout_ms);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, (void *)x);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)x);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, (void *)x);
  if (c->access_key_id) {
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, x->p->sigv4);
    curl_easy_setopt(e, CURLOPT_USERNAME, c->access_key_id);
    curl_easy_setopt(e, CURLOPT_PASSWORD, c->secret_access_key);
  }
  if (!strcmp(r->method, "HEAD")) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (!strcmp(r->method, "PUT")) {
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(e, CURLOPT_READDATA, (void *)x);
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, (void *)x);
  } else if (!strcmp(r->method, "POST")) {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? (const char *)r->body : "");
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    stat_add(&x->p->stats->bytes_sent, (int64_t)r->body_len);
  } else if (strcmp(r->method, "GET")) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
  }
  r->tries++;
  stat_add(&x->p->stats->requests, 1);
  if (r->tries > 1) stat_add(&x->p->stats->retries, 1);
  if (!strcmp(r->method, "GET")) stat_add(&x->p->stats->get_requests, 1);
  return DK_OK;
nomem:
  curl_slist_free_all(l);
  return dk__error_set(err, DK_NOMEM, "out of memory");
}

static const char *key_of(const dk_s3__req *r) { return r->key ? r->key : ""; }

static int retryable_curl(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
      return 1;
    default:
      return 0;
  }
}

static int retryable_status(const dk_s3__req *r, long st, const char *code) {
  if (st == 500 || st == 502 || st == 503 || st == 504 || st == 429 || st == 408) return 1;
  if (st == 400 && !strcmp(code, "RequestTimeout")) return 1;
  if (st == 409 && r->if_none_match) return 1; /* ConditionalRequestConflict: try again */
  if (st == 200 && code[0]) return strcmp(code, "AccessDenied") != 0; /* <Error> in a 200 */
  return 0;
}

static int has_effects(const dk_s3__req *r) {
  return strcmp(r->method, "GET") && strcmp(r->method, "HEAD");
}

static int64_t backoff_ms(dk_s3__pool *p, int tries) {
  int64_t d = 100;
  for (int i = 1; i < tries && d < 5000; i++) d *= 2;
  if (d > 5000) d = 5000;
  /* splitmix64 over a shared counter: jitter without global state */
  uint64_t z = __atomic_add_fetch(&p->seed, 0x9E3779B97F4A7C15ull, __ATOMIC_RELAXED);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return d / 2 + (int64_t)(z % (uint64_t)(d / 2 + 1));
}

/* Judges a finished try: done (result set) or waiting for a retry (wake_ms set). */
static void judge(xfer *x, CURLcode rc) {
  dk_s3__pool *p = x->p;
  const dk_s3__conf *c = p->conf;
  dk_s3__req *r = x->r;
  const char *what = NULL;
  char why[400];
  int retry = 0;
  if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && x->sink_st == DK_OK)) {
    if (!x->status_known) first_body_byte(x); /* no body at all */
    r->status = x->status;
    if (x->to_err) {
      dk_s3__xml_error_parse(x->errbody.data, x->errbody.len, &r->xerr, p->alloc);
    } else if (r->status == 200 && !strcmp(r->method, "POST") && r->sink == DK_S3__TO_BUF &&
               r->out->len > x->out_base) {
      dk_s3__xml_error_parse(r->out->data + x->out_base, r->out->len - x->out_base, &r->xerr,
                             p->alloc);
    }
    retry = retryable_status(r, r->status, r->xerr.code);
    if (retry && has_effects(r) && (r->status == 500 || r->status == 502 || r->status == 504 ||
                                    r->status == 200))
      r->ambiguous = 1;
    snprintf(why, sizeof why, "HTTP %ld%s%s", r->status, r->xerr.code[0] ? " " : "", r->xerr.code);
    what = why;
  } else if (rc == CURLE_ABORTED_BY_CALLBACK) {
    x->result = DK_CANCELLED;
    snprintf(x->result_msg, sizeof x->result_msg, "s3 %s s3://%s/%s: cancelled", r->method,
             c->bucket, key_of(r));
    x->state = X_DONE;
    return;
  } else if (rc == CURLE_WRITE_ERROR) { /* our sink refused the body */
    x->result = x->sink_st;
    snprintf(x->result_msg, sizeof x->result_msg, "s3 %s s3://%s/%s: %s", r->method, c->bucket,
             key_of(r), x->sink_msg);
    x->state = X_DONE;
    return;
  } else {
    retry = retryable_curl(rc);
    if (has_effects(r) && rc != CURLE_COULDNT_CONNECT && rc != CURLE_COULDNT_RESOLVE_HOST)
      r->ambiguous = 1;
    snprintf(why, sizeof why, "%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));
    what = why;
    if (!retry) {
      x->result = DK_IO;
      snprintf(x->result_msg, sizeof x->result_msg, "s3 %s s3://%s/%s: %s (curl error %d)",
               r->method, c->bucket, key_of(r), what, (int)rc);
      x->state = X_DONE;
      return;
    }
  }
  if (retry) {
    int64_t now = now_ms(), wait = backoff_ms(p, r->tries);
    if (r->tries <= c->max_retries && now + wait - x->first_ms <= c->retry_timeout_ms) {
      x->state = X_WAITING;
      x->wake_ms = now + wait;
      return;
    }
    if (rc != CURLE_OK) { /* out of retries on a transport error */
      x->result = DK_IO;
      snprintf(x->result_msg, sizeof x->result_msg, "s3 %s s3://%s/%s: %s (after %d tr%s)",
               r->method, c->bucket, key_of(r), what, r->tries, r->tries == 1 ? "y" : "ies");
      x->state = X_DONE;
      return;
    }
  }
  x->result = DK_OK; /* an HTTP answer: the caller judges the status */
  x->state = X_DONE;
}

static dk_status start(lane *l, xfer *x, dk_error *err) {
  DK_RETURN_NOT_OK(setup_try(x, err));
  CURLMcode mc = curl_multi_add_handle(l->multi, x->e);
  DK_RETURN_IF(mc != CURLM_OK, DK_IO, err, "s3: curl_multi_add_handle: %s", curl_multi_strerror(mc));
  x->state = X_RUNNING;
  return DK_OK;
}

dk_status dk_s3__run(dk_s3__pool *p, dk_s3__req **reqs, size_t n, dk_error *err) {
  if (n == 0) return DK_OK;
  const dk_s3__conf *c = p->conf;
  lane *l = lane_acquire(p);
  DK_RETURN_IF(!l, DK_NOMEM, err, "s3: out of memory (connection pool)");
  xfer *xs = dk__calloc(p->alloc, n, sizeof *xs);
  if (!xs) {
    lane_release(p, l);
    return dk__error_set(err, DK_NOMEM, "out of memory");
  }
  int nslots = c->max_connections;
  int free_slots[64], nfree = 0;
  for (int i = nslots - 1; i >= 0; i--) free_slots[nfree++] = i;
  dk_status st = DK_OK;
  int64_t t0 = now_ms();
  for (size_t i = 0; i < n; i++) {
    xs[i].p = p;
    xs[i].r = reqs[i];
    xs[i].slot = -1;
    xs[i].first_ms = t0;
    dk__buf_init(&xs[i].url, p->alloc);
    dk__buf_init(&xs[i].errbody, p->alloc);
    reqs[i]->tries = 0;
    reqs[i]->ambiguous = 0;
    reqs[i]->received = 0;
    if (reqs[i]->sink == DK_S3__TO_BUF) xs[i].out_base = reqs[i]->out->len;
    DK_CHECK_GOTO(build_url(&xs[i], err));
  }
  size_t ndone = 0, next = 0;
  while (ndone < n) {
    /* start queued transfers while connections are free, and due retries */
    int64_t now = now_ms(), wake = now + 250;
    for (; next < n && nfree > 0; next++) {
      xfer *x = &xs[next];
      x->slot = free_slots[--nfree];
      if (!l->easy[x->slot] && !(l->easy[x->slot] = curl_easy_init()))
        DK_CHECK_GOTO(dk__error_set(err, DK_NOMEM, "s3: curl_easy_init failed"));
      x->e = l->easy[x->slot];
      x->first_ms = now;
      DK_CHECK_GOTO(start(l, x, err));
    }
    for (size_t i = 0; i < next; i++) {
      if (xs[i].state != X_WAITING) continue;
      if (xs[i].wake_ms <= now) DK_CHECK_GOTO(start(l, &xs[i], err));
      else if (xs[i].wake_ms < wake) wake = xs[i].wake_ms;
    }
    if (c->cancel && c->cancel(c->cancel_ctx)) {
      st = dk__error_set(err, DK_CANCELLED, "s3 %s s3://%s/%s: cancelled", reqs[0]->method,
                         c->bucket, key_of(reqs[0]));
      goto cleanup;
    }
    int running = 0;
    CURLMcode mc = curl_multi_perform(l->multi, &running);
    if (mc != CURLM_OK)
      DK_CHECK_GOTO(dk__error_set(err, DK_IO, "s3: curl_multi_perform: %s", curl_multi_strerror(mc)));
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(l->multi, &left))) {
      if (msg->msg != CURLMSG_DONE) continue;
      xfer *x = NULL;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
      CURLcode rc = msg->data.result;
      curl_multi_remove_handle(l->multi, msg->easy_handle);
      judge(x, rc);
      if (x->state == X_DONE) {
        ndone++;
        free_slots[nfree++] = x->slot;
        x->slot = -1;
        x->e = NULL;
      }
    }
    if (ndone == n) break;
    int64_t t = wake - now_ms();
    if (running || t > 0)
      curl_multi_poll(l->multi, NULL, 0, (int)DK_MAX(1, DK_MIN(t, 250)), NULL);
  }
  for (size_t i = 0; i < n && st == DK_OK; i++)
    if (xs[i].result != DK_OK) st = dk__error_set(err, xs[i].result, "%s", xs[i].result_msg);
cleanup:
  for (size_t i = 0; i < n; i++) {
    if (xs[i].state == X_RUNNING && xs[i].e) curl_multi_remove_handle(l->multi, xs[i].e);
    curl_slist_free_all(xs[i].hdrs);
    dk__buf_dispose(&xs[i].url);
    dk__buf_dispose(&xs[i].errbody);
  }
  dk__free(p->alloc, xs);
  lane_release(p, l);
  return st;
}

dk_status dk_s3__status_error(const dk_s3__pool *p, const dk_s3__req *r, const char *op,
                              dk_error *err) {
  const dk_s3__conf *c = p->conf;
  dk_status code = r->status == 404 ? DK_NOT_FOUND
                   : r->status == 412 ? DK_CONFLICT
                   : r->status == 416 ? DK_CORRUPT
                                      : DK_IO;
  const char *ec = r->xerr.code;
  char hint[700] = "";
  if (r->status == 401 || r->status == 403 || !strcmp(ec, "InvalidAccessKeyId") ||
      !strcmp(ec, "SignatureDoesNotMatch") || !strcmp(ec, "ExpiredToken") ||
      !strcmp(ec, "InvalidToken"))
    snprintf(hint, sizeof hint, "; credentials: %s", c->cred_source);
  else if (!strcmp(ec, "NoSuchBucket"))
    snprintf(hint, sizeof hint, "; bucket '%s' does not exist at %s://%s%s", c->bucket, c->scheme,
             c->host, c->base_path);
  else if (r->status == 301 || r->status == 307 || !strcmp(ec, "PermanentRedirect") ||
           !strcmp(ec, "AuthorizationHeaderMalformed"))
    snprintf(hint, sizeof hint, "; is bucket '%s' in another region than %s? (set aws_region)",
             c->bucket, c->region);
  char tries[40] = "";
  if (r->tries > 1) snprintf(tries, sizeof tries, " (after %d tries)", r->tries);
  return dk__error_set(err, code, "s3 %s s3://%s/%s: HTTP %ld%s%s%s%s%s%s%s%s%s", op, c->bucket,
                       key_of(r), r->status, ec[0] ? " " : "", ec,
                       r->xerr.message[0] ? ": " : "", r->xerr.message,
                       r->xerr.request_id[0] ? " (request id " : "", r->xerr.request_id,
                       r->xerr.request_id[0] ? ")" : "", tries, hint);
}

dk_status dk_s3__sleep_ms(const dk_s3__conf *c, int64_t ms, dk_error *err) {
  int64_t end = now_ms() + ms;
  for (;;) {
    if (c->cancel && c->cancel(c->cancel_ctx))
      return dk__error_set(err, DK_CANCELLED, "s3: cancelled");
    int64_t left = end - now_ms();
    if (left <= 0) return DK_OK;
    struct timespec ts = {0, (long)DK_MIN(left, 50) * 1000000L};
    nanosleep(&ts, NULL);
  }
}
