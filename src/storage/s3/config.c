/*
** config.c — the S3 backend's settings: dk_s3_options (also set by name with
** dk_s3_options_set, in delta-rs's option names), then the environment and the shared AWS
** files (~/.aws/credentials, ~/.aws/config, INI with profiles), then defaults; resolved once,
** in dk_storage_s3_new, into a dk_s3__conf. The order follows the AWS SDKs' default chains
** (static keys > environment > shared files) with delta-rs's extras (AWS_ALLOW_HTTP,
** AWS_S3_ALLOW_UNSAFE_RENAME, AWS_VIRTUAL_HOSTED_STYLE_REQUEST). Profiles whose credentials
** come from a process, SSO or an assumed role are refused with a clear error: dk signs with
** static or session keys only.
** Also the small encoders the backend needs (SigV4 percent-encoding, ISO 8601 times, the
** exclusive start-after key), written here because no Debian library offers them alone.
*/
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include "storage/local.h"
#include "storage/s3/s3.h"

/* ---- small helpers ---------------------------------------------------------------------- */

static const char *nonempty(const char *s) { return s && *s ? s : NULL; }

static int parse_bool(const char *v, int *out) {
  static const char *yes[] = {"true", "1", "yes", "on"}, *no[] = {"false", "0", "no", "off"};
  for (size_t i = 0; i < DK_ARRAY_LEN(yes); i++) {
    if (!strcasecmp(v, yes[i])) return *out = 1, 1;
    if (!strcasecmp(v, no[i])) return *out = 0, 1;
  }
  return 0;
}

/* "250ms", "10s", "2m", "1h"; a bare number is seconds. */
static int parse_duration_ms(const char *v, int64_t *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (end == v || errno || x < 0) return 0;
  while (*end == ' ') end++;
  double mul = 1000;
  if (!strcasecmp(end, "ms")) mul = 1;
  else if (!*end || !strcasecmp(end, "s")) mul = 1000;
  else if (!strcasecmp(end, "m") || !strcasecmp(end, "min")) mul = 60000;
  else if (!strcasecmp(end, "h")) mul = 3600000;
  else return 0;
  double ms = x * mul;
  if (ms > 1e15) return 0;
  *out = (int64_t)(ms + 0.5);
  return 1;
}

/* "8388608", "8MiB", "8M", "512k" (binary units). */
static int parse_size(const char *v, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (end == v || errno) return 0;
  while (*end == ' ') end++;
  unsigned long long mul = 1;
  char u = (char)tolower((unsigned char)*end);
  if (u == 'k') mul = 1ull << 10;
  else if (u == 'm') mul = 1ull << 20;
  else if (u == 'g') mul = 1ull << 30;
  else if (u) return 0;
  if (u) {
    const char *rest = end + 1;
    if (*rest && strcasecmp(rest, "ib") && strcasecmp(rest, "b")) return 0;
  }
  if (x > SIZE_MAX / mul) return 0;
  *out = (size_t)(x * mul);
  return 1;
}

static int parse_int(const char *v, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (end == v || *end || errno || x < lo || x > hi) return 0;
  *out = (int)x;
  return 1;
}

/* ---- dk_s3_options_set ------------------------------------------------------------------ */

dk_status dk_s3_options_set(dk_s3_options *o, const char *key, const char *value,
                            dk_error *err) {
  DK_RETURN_IF(!o || !key || !value, DK_INVALID, err, "dk_s3_options_set: NULL argument");
  if (o->version == 0) o->version = DK_S3_OPTIONS_VERSION;
  char k[64];
  size_t n = strlen(key);
  DK_RETURN_IF(n >= sizeof k, DK_INVALID, err, "unknown storage option '%s'", key);
  for (size_t i = 0; i <= n; i++) k[i] = (char)tolower((unsigned char)key[i]);
  const char *name = !strncmp(k, "aws_", 4) ? k + 4 : k;
  int b;
  /* strings (borrowed) */
  struct { const char *name; const char **field; } strs[] = {
      {"access_key_id", &o->access_key_id},   {"secret_access_key", &o->secret_access_key},
      {"session_token", &o->session_token},   {"token", &o->session_token},
      {"region", &o->region},                 {"default_region", &o->region},
      {"endpoint_url", &o->endpoint},         {"endpoint", &o->endpoint},
      {"endpoint_url_s3", &o->endpoint},      {"profile", &o->profile},
      {"bucket", &o->bucket},                 {"bucket_name", &o->bucket},
      {"dk_s3_config_file", &o->config_file}, {"dk_s3_credentials_file", &o->credentials_file},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(strs); i++)
    if (!strcmp(name, strs[i].name)) return *strs[i].field = value, DK_OK;
  if (!strcmp(name, "allow_http")) {
    DK_RETURN_IF(!parse_bool(value, &b), DK_INVALID, err, "storage option %s: '%s' is not a boolean", key, value);
    o->allow_http = b ? 1 : -1;
    return DK_OK;
  }
  if (!strcmp(name, "virtual_hosted_style_request")) {
    DK_RETURN_IF(!parse_bool(value, &b), DK_INVALID, err, "storage option %s: '%s' is not a boolean", key, value);
    o->addressing = b ? DK_S3_ADDRESSING_VIRTUAL : DK_S3_ADDRESSING_PATH;
    return DK_OK;
  }
  if (!strcmp(name, "s3_allow_unsafe_rename")) {
    DK_RETURN_IF(!parse_bool(value, &b), DK_INVALID, err, "storage option %s: '%s' is not a boolean", key, value);
    o->put_if_absent = b ? DK_S3_PUT_IF_ABSENT_UNSAFE : DK_S3_PUT_IF_ABSENT_AUTO;
    return DK_OK;
  }
  if (!strcmp(name, "dk_s3_skip_env")) {
    DK_RETURN_IF(!parse_bool(value, &b), DK_INVALID, err, "storage option %s: '%s' is not a boolean", key, value);
    o->skip_env = b;
    return DK_OK;
  }
  if (!strcmp(name, "dk_s3_put_if_absent")) {
    if (!strcasecmp(value, "auto")) o->put_if_absent = DK_S3_PUT_IF_ABSENT_AUTO;
    else if (!strcasecmp(value, "trust")) o->put_if_absent = DK_S3_PUT_IF_ABSENT_TRUST;
    else if (!strcasecmp(value, "unsafe")) o->put_if_absent = DK_S3_PUT_IF_ABSENT_UNSAFE;
    else return dk__error_set(err, DK_INVALID, "storage option %s: '%s' is not auto, trust or unsafe", key, value);
    return DK_OK;
  }
  if (!strcmp(name, "s3_locking_provider")) {
    if (!strcasecmp(value, "none") || !*value) return DK_OK;
    return dk__error_set(err, DK_UNSUPPORTED,
                         "storage option %s=%s: dk commits to S3 with conditional PUTs "
                         "(If-None-Match: *), not through a lock provider",
                         key, value);
  }
  struct { const char *name; int64_t *field; } durs[] = {
      {"connect_timeout", &o->connect_timeout_ms}, {"timeout", &o->request_timeout_ms},
      {"retry_timeout", &o->retry_timeout_ms},     {"dk_s3_stall_timeout", &o->stall_timeout_ms},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(durs); i++)
    if (!strcmp(name, durs[i].name)) {
      DK_RETURN_IF(!parse_duration_ms(value, durs[i].field), DK_INVALID, err,
                   "storage option %s: '%s' is not a duration (\"10s\", \"500ms\")", key, value);
      if (*durs[i].field == 0) *durs[i].field = 1; /* 0 would mean "default" */
      return DK_OK;
    }
  struct { const char *name; int *field; int lo, hi; } ints[] = {
      {"max_retries", &o->max_retries, 0, 100},
      {"dk_s3_max_connections", &o->max_connections, 1, 64},
      {"dk_s3_list_page_size", &o->list_page_size, 1, 1000},
  };
  for (size_t i = 0; i < DK_ARRAY_LEN(ints); i++)
    if (!strcmp(name, ints[i].name)) {
      DK_RETURN_IF(!parse_int(value, ints[i].lo, ints[i].hi, ints[i].field), DK_INVALID, err,
                   "storage option %s: '%s' is not an integer in [%d, %d]", key, value,
                   ints[i].lo, ints[i].hi);
      if (ints[i].field == &o->max_retries && *ints[i].field == 0) o->max_retries = -1;
      return DK_OK;
    }
  struct { const char *name; size_t *field; } sizes[] = {
      {"dk_s3_part_size", &o->part_size}, {"dk_s3_coalesce_gap", &o->coalesce_gap}};
  for (size_t i = 0; i < DK_ARRAY_LEN(sizes); i++)
    if (!strcmp(name, sizes[i].name)) {
      DK_RETURN_IF(!parse_size(value, sizes[i].field), DK_INVALID, err,
                   "storage option %s: '%s' is not a size (\"8MiB\", bytes)", key, value);
      return DK_OK;
    }
  return dk__error_set(err, DK_INVALID, "unknown storage option '%s'", key);
}

/* ---- dk_storage_s3_for_uri ---------------------------------------------------------------- */

int dk_storage_s3_is_uri(const char *uri) {
  return uri && (!strncasecmp(uri, "s3://", 5) || !strncasecmp(uri, "s3a://", 6));
}

dk_status dk_storage_s3_for_uri(dk_storage **out, const char *uri, size_t n,
                                const char *const *keys, const char *const *values,
                                const dk_allocator *alloc, dk_error *err) {
  DK_RETURN_IF(!out, DK_INVALID, err, "dk_storage_s3_for_uri: out is NULL");
  *out = NULL;
  DK_RETURN_IF(!dk_storage_s3_is_uri(uri), DK_INVALID, err,
               "'%s' is not an s3:// or s3a:// URI", uri ? uri : "(null)");
  DK_RETURN_IF(n && (!keys || !values), DK_INVALID, err, "dk_storage_s3_for_uri: NULL options");
  const char *b = strstr(uri, "://") + 3, *slash = strchr(b, '/');
  size_t bl = slash ? (size_t)(slash - b) : strlen(b);
  char bucket[256]; /* S3 bucket names have at most 63 characters */
  DK_RETURN_IF(bl == 0 || bl >= sizeof bucket, DK_INVALID, err, "'%s' names no bucket", uri);
  memcpy(bucket, b, bl);
  bucket[bl] = 0;
  dk_s3_options o = {.version = DK_S3_OPTIONS_VERSION};
  for (size_t i = 0; i < n; i++) DK_RETURN_NOT_OK(dk_s3_options_set(&o, keys[i], values[i], err));
  o.bucket = bucket;
  return dk_storage_s3_new(out, &o, alloc, err);
}

/* ---- shared files ------------------------------------------------------------------------ */

static const char *skip_ws(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
  return p;
}
static const char *trim_end(const char *p, const char *e) {
  while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
  return e;
}

char *dk_s3__ini_get(const char *text, const char *section, const char *key, int *found_section,
                     const dk_allocator *alloc) {
  int in = 0;
  size_t slen = strlen(section), klen = strlen(key);
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    const char *e = nl ? nl : line + strlen(line);
    const char *next = nl ? nl + 1 : NULL;
    int indented = line < e && (*line == ' ' || *line == '\t');
    const char *p = skip_ws(line, e);
    const char *q = trim_end(p, e);
    line = next;
    if (p == q || *p == '#' || *p == ';') continue;
    if (*p == '[') {
      const char *close = memchr(p, ']', (size_t)(q - p));
      if (!close) { in = 0; continue; }
      const char *a = skip_ws(p + 1, close), *b = trim_end(a, close);
      /* "profile  x" may have several spaces */
      if ((size_t)(b - a) > 8 && !strncmp(a, "profile ", 8) && !strncmp(section, "profile ", 8)) {
        const char *an = skip_ws(a + 8, b);
        in = (size_t)(b - an) == slen - 8 && !memcmp(an, section + 8, slen - 8);
      } else {
        in = (size_t)(b - a) == slen && !memcmp(a, section, slen);
      }
      if (in && found_section) *found_section = 1;
      continue;
    }
    if (!in || indented) continue; /* indented lines belong to a nested "s3 =" block */
    const char *eq = memchr(p, '=', (size_t)(q - p));
    if (!eq) continue;
    const char *ke = trim_end(p, eq);
    if ((size_t)(ke - p) != klen || strncasecmp(p, key, klen)) continue;
    const char *v = skip_ws(eq + 1, q);
    return dk__strndup(alloc, v, (size_t)(q - v));
  }
  return NULL;
}

typedef struct shared_files {
  char *cred_path, *conf_path;
  char *cred, *conf; /* texts, NULL when unreadable */
  const char *profile;
  char conf_section[300];
  int in_cred, in_conf; /* the profile's section exists */
} shared_files;

static char *home_path(const dk_allocator *a, const char *rel) {
  const char *home = nonempty(getenv("HOME"));
  if (!home) return NULL;
  dk_buf b;
  dk__buf_init(&b, a);
  if (dk__buf_printf(&b, NULL, "%s/%s", home, rel) != DK_OK) {
    dk__buf_dispose(&b);
    return NULL;
  }
  return dk__buf_detach(&b);
}

static void files_load(shared_files *f, const dk_s3_options *o, const char *profile,
                       const dk_allocator *a) {
  memset(f, 0, sizeof *f);
  f->profile = profile;
  if (o->credentials_file) f->cred_path = dk__strdup(a, o->credentials_file);
  else if (!o->skip_env) {
    const char *e = nonempty(getenv("AWS_SHARED_CREDENTIALS_FILE"));
    f->cred_path = e ? dk__strdup(a, e) : home_path(a, ".aws/credentials");
  }
  if (o->config_file) f->conf_path = dk__strdup(a, o->config_file);
  else if (!o->skip_env) {
    const char *e = nonempty(getenv("AWS_CONFIG_FILE"));
    f->conf_path = e ? dk__strdup(a, e) : home_path(a, ".aws/config");
  }
  size_t len;
  if (f->cred_path && dk_storage__read_local_file(a, f->cred_path, &f->cred, &len, NULL) != DK_OK) f->cred = NULL;
  if (f->conf_path && dk_storage__read_local_file(a, f->conf_path, &f->conf, &len, NULL) != DK_OK) f->conf = NULL;
  if (!strcmp(profile, "default")) snprintf(f->conf_section, sizeof f->conf_section, "default");
  else snprintf(f->conf_section, sizeof f->conf_section, "profile %s", profile);
  char *probe;
  if (f->cred && (probe = dk_s3__ini_get(f->cred, profile, "\x01", &f->in_cred, a))) dk__free(a, probe);
  if (f->conf && (probe = dk_s3__ini_get(f->conf, f->conf_section, "\x01", &f->in_conf, a))) dk__free(a, probe);
}

static void files_dispose(shared_files *f, const dk_allocator *a) {
  dk__free(a, f->cred_path);
  dk__free(a, f->conf_path);
  dk__free(a, f->cred);
  dk__free(a, f->conf);
}

/* The profile's value of key: the credentials file first, then the config file. */
static char *profile_get(const shared_files *f, const char *key, const dk_allocator *a) {
  char *v = NULL;
  if (f->cred) v = dk_s3__ini_get(f->cred, f->profile, key, NULL, a);
  if (!v && f->conf) v = dk_s3__ini_get(f->conf, f->conf_section, key, NULL, a);
  if (v && !*v) {
    dk__free(a, v);
    v = NULL;
  }
  return v;
}

/* ---- resolution --------------------------------------------------------------------------- */

static const char *envv(const dk_s3_options *o, const char *name) {
  return o->skip_env ? NULL : nonempty(getenv(name));
}

static dk_status set_str(char **dst, const char *v, const dk_allocator *a, dk_error *err) {
  if (!v) return DK_OK;
  *dst = dk__strdup(a, v);
  return *dst ? DK_OK : dk__error_set(err, DK_NOMEM, "out of memory");
}

static dk_status set_source(dk_s3__conf *c, const dk_allocator *a, dk_error *err,
                            const char *fmt, ...) DK_PRINTF(4, 5);
static dk_status set_source(dk_s3__conf *c, const dk_allocator *a, dk_error *err,
                            const char *fmt, ...) {
  char tmp[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  return set_str(&c->cred_source, tmp, a, err);
}

static int dns_compatible(const char *bucket) {
  size_t n = strlen(bucket);
  if (n < 3 || n > 63) return 0;
  for (const char *p = bucket; *p; p++)
    if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-')) return 0;
  return bucket[0] != '-' && bucket[n - 1] != '-';
}

/* Letters, digits, '-' and '.': a bucket that can prefix a host name. */
static int host_label_chars(const char *bucket) {
  for (const char *p = bucket; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '.')) return 0;
  return *bucket != 0;
}

/* scheme://host[:port][/path] into c->scheme, c->host, c->base_path. */
static dk_status parse_endpoint(dk_s3__conf *c, const char *ep, const dk_allocator *a,
                                dk_error *err) {
  const char *p = ep, *scheme = "https";
  if (!strncasecmp(p, "https://", 8)) p += 8;
  else if (!strncasecmp(p, "http://", 7)) p += 7, scheme = "http";
  else if (strstr(p, "://"))
    return dk__error_set(err, DK_INVALID, "s3 endpoint '%s': only http:// and https:// are supported", ep);
  const char *slash = strchr(p, '/');
  size_t hl = slash ? (size_t)(slash - p) : strlen(p);
  DK_RETURN_IF(hl == 0, DK_INVALID, err, "s3 endpoint '%s' has no host", ep);
  for (size_t i = 0; i < hl; i++) {
    unsigned char ch = (unsigned char)p[i];
    DK_RETURN_IF(!(isalnum(ch) || ch == '.' || ch == '-' || ch == ':' || ch == '[' || ch == ']' || ch == '_'),
                 DK_INVALID, err, "s3 endpoint '%s': bad character in host", ep);
  }
  c->scheme = dk__strdup(a, scheme);
  c->host = dk__strndup(a, p, hl);
  const char *path = slash ? slash : "";
  size_t pl = strlen(path);
  while (pl > 0 && path[pl - 1] == '/') pl--;
  c->base_path = dk__strndup(a, path, pl);
  DK_RETURN_IF(!c->scheme || !c->host || !c->base_path, DK_NOMEM, err, "out of memory");
  return DK_OK;
}

void dk_s3__conf_dispose(dk_s3__conf *c, const dk_allocator *a) {
  char **s[] = {&c->bucket, &c->region, &c->scheme, &c->host, &c->base_path, &c->access_key_id,
                &c->secret_access_key, &c->session_token, &c->cred_source};
  for (size_t i = 0; i < DK_ARRAY_LEN(s); i++) {
    if (*s[i] && (s[i] == &c->secret_access_key || s[i] == &c->session_token))
      memset(*s[i], 0, strlen(*s[i]));
    dk__free(a, *s[i]);
    *s[i] = NULL;
  }
}

static dk_status resolve_credentials(dk_s3__conf *c, const dk_s3_options *o,
                                     const shared_files *f, int profile_explicit,
                                     const dk_allocator *a, dk_error *err) {
  if (o->access_key_id || o->secret_access_key) {
    DK_RETURN_IF(!nonempty(o->access_key_id) || !nonempty(o->secret_access_key), DK_INVALID, err,
                 "s3 options: access_key_id and secret_access_key go together");
    DK_RETURN_NOT_OK(set_str(&c->access_key_id, o->access_key_id, a, err));
    DK_RETURN_NOT_OK(set_str(&c->secret_access_key, o->secret_access_key, a, err));
    DK_RETURN_NOT_OK(set_str(&c->session_token, nonempty(o->session_token), a, err));
    return set_source(c, a, err, "the storage options");
  }
  const char *ek = envv(o, "AWS_ACCESS_KEY_ID"), *es = envv(o, "AWS_SECRET_ACCESS_KEY");
  if (!o->profile && ek && es) {
    DK_RETURN_NOT_OK(set_str(&c->access_key_id, ek, a, err));
    DK_RETURN_NOT_OK(set_str(&c->secret_access_key, es, a, err));
    DK_RETURN_NOT_OK(set_str(&c->session_token, envv(o, "AWS_SESSION_TOKEN"), a, err));
    return set_source(c, a, err, "the environment (AWS_ACCESS_KEY_ID)");
  }
  if (!f->in_cred && !f->in_conf) {
    DK_RETURN_IF(profile_explicit, DK_INVALID, err,
                 "s3: profile '%s' is in neither %s nor %s", f->profile,
                 f->cred_path ? f->cred_path : "(no credentials file)",
                 f->conf_path ? f->conf_path : "(no config file)");
    return set_source(c, a, err, "none (no keys in the options, the environment or a profile: "
                                 "anonymous requests)");
  }
  char *id = profile_get(f, "aws_access_key_id", a);
  char *secret = profile_get(f, "aws_secret_access_key", a);
  char *token = profile_get(f, "aws_session_token", a);
  dk_status st = DK_OK;
  if (!id || !secret) {
    static const char *other[] = {"credential_process", "sso_session", "sso_start_url",
                                  "role_arn", "web_identity_token_file"};
    const char *which = NULL;
    for (size_t i = 0; i < DK_ARRAY_LEN(other) && !which; i++) {
      char *v = profile_get(f, other[i], a);
      if (v) which = other[i];
      dk__free(a, v);
    }
    if (which)
      st = dk__error_set(err, DK_UNSUPPORTED,
                         "s3: profile '%s' gets its credentials through %s, which dk does not "
                         "run; export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY(/AWS_SESSION_TOKEN) "
                         "or give the keys as storage options",
                         f->profile, which);
    else if (id || secret || profile_explicit)
      st = dk__error_set(err, DK_INVALID,
                         "s3: profile '%s' has no aws_access_key_id and aws_secret_access_key "
                         "pair (%s, %s)",
                         f->profile, f->cred_path ? f->cred_path : "-",
                         f->conf_path ? f->conf_path : "-");
    else
      st = set_source(c, a, err, "none (profile '%s' has no keys: anonymous requests)", f->profile);
  } else {
    c->access_key_id = id;
    c->secret_access_key = secret;
    c->session_token = token;
    id = secret = token = NULL;
    st = set_source(c, a, err, "profile '%s' (%s%s%s)", f->profile,
                    f->in_cred && f->cred_path ? f->cred_path : "",
                    f->in_cred && f->in_conf ? ", " : "",
                    f->in_conf && f->conf_path ? f->conf_path : "");
  }
  dk__free(a, id);
  dk__free(a, secret);
  dk__free(a, token);
  return st;
}

dk_status dk_s3__conf_resolve(dk_s3__conf *c, const dk_s3_options *o, const dk_allocator *a,
                              dk_error *err) {
  memset(c, 0, sizeof *c);
  DK_RETURN_IF(!o, DK_INVALID, err, "dk_storage_s3_new: options are required (the bucket)");
  DK_RETURN_IF(o->version == 0 || o->version > DK_S3_OPTIONS_VERSION, DK_INVALID, err,
               "dk_storage_s3_new: options version %u is not supported (this dk knows 1..%d)",
               o->version, DK_S3_OPTIONS_VERSION);
  DK_RETURN_IF(!nonempty(o->bucket), DK_INVALID, err, "dk_storage_s3_new: no bucket given");
  DK_RETURN_IF(strchr(o->bucket, '/') || strlen(o->bucket) > 255, DK_INVALID, err,
               "dk_storage_s3_new: '%s' is not a bucket name", o->bucket);
  DK_RETURN_IF(o->part_size && o->part_size < ((size_t)5 << 20), DK_INVALID, err,
               "s3 options: part_size %zu is below S3's minimum part of 5 MiB", o->part_size);
  DK_RETURN_IF(o->addressing < 0 || o->addressing > DK_S3_ADDRESSING_VIRTUAL, DK_INVALID, err,
               "s3 options: addressing %d is not a dk_s3_addressing", o->addressing);
  DK_RETURN_IF(o->put_if_absent < 0 || o->put_if_absent > DK_S3_PUT_IF_ABSENT_UNSAFE, DK_INVALID,
               err, "s3 options: put_if_absent %d is not a dk_s3_put_if_absent", o->put_if_absent);
  dk_status st = DK_OK;
  const char *env_profile = envv(o, "AWS_PROFILE");
  const char *profile = nonempty(o->profile) ? o->profile : env_profile ? env_profile : "default";
  int explicit_profile = nonempty(o->profile) || env_profile;
  shared_files f;
  files_load(&f, o, profile, a);
  char *pregion = NULL, *pendpoint = NULL;
  DK_CHECK_GOTO(set_str(&c->bucket, o->bucket, a, err));
  DK_CHECK_GOTO(resolve_credentials(c, o, &f, explicit_profile, a, err));
  /* region */
  const char *region = nonempty(o->region);
  if (!region) region = envv(o, "AWS_REGION");
  if (!region) region = envv(o, "AWS_DEFAULT_REGION");
  if (!region) region = pregion = profile_get(&f, "region", a);
  DK_CHECK_GOTO(set_str(&c->region, region ? region : "us-east-1", a, err));
  /* endpoint and addressing */
  const char *ep = nonempty(o->endpoint);
  if (!ep) ep = envv(o, "AWS_ENDPOINT_URL_S3");
  if (!ep) ep = envv(o, "AWS_ENDPOINT_URL");
  if (!ep) ep = pendpoint = profile_get(&f, "endpoint_url", a);
  int addressing = o->addressing;
  const char *vh = envv(o, "AWS_VIRTUAL_HOSTED_STYLE_REQUEST");
  int b;
  if (addressing == DK_S3_ADDRESSING_AUTO && vh && parse_bool(vh, &b))
    addressing = b ? DK_S3_ADDRESSING_VIRTUAL : DK_S3_ADDRESSING_PATH;
  if (ep) {
    DK_CHECK_GOTO(parse_endpoint(c, ep, a, err));
    c->virtual_hosted = addressing == DK_S3_ADDRESSING_VIRTUAL;
  } else {
    char host[300];
    snprintf(host, sizeof host, "https://s3.%s.amazonaws.com", c->region);
    DK_CHECK_GOTO(parse_endpoint(c, host, a, err));
    c->virtual_hosted = addressing == DK_S3_ADDRESSING_VIRTUAL ||
                        (addressing == DK_S3_ADDRESSING_AUTO && dns_compatible(c->bucket));
  }
  if (c->virtual_hosted && !host_label_chars(c->bucket)) {
    st = dk__error_set(err, DK_INVALID,
                       "s3: bucket '%s' cannot be addressed virtual-hosted style (not a DNS "
                       "name); use path-style addressing",
                       c->bucket);
    goto cleanup;
  }
  if (!strcmp(c->scheme, "http")) {
    int allow = o->allow_http > 0;
    const char *ah = envv(o, "AWS_ALLOW_HTTP");
    if (o->allow_http == 0 && ah && parse_bool(ah, &b)) allow = b;
    if (!allow) {
      st = dk__error_set(err, DK_INVALID,
                         "s3 endpoint http://%s%s is plain HTTP; set aws_allow_http=true "
                         "(or AWS_ALLOW_HTTP=true) to use it",
                         c->host, c->base_path);
      goto cleanup;
    }
  }
  /* write mode */
  c->put_if_absent = o->put_if_absent;
  const char *unsafe = envv(o, "AWS_S3_ALLOW_UNSAFE_RENAME");
  if (c->put_if_absent == DK_S3_PUT_IF_ABSENT_AUTO && unsafe && parse_bool(unsafe, &b) && b)
    c->put_if_absent = DK_S3_PUT_IF_ABSENT_UNSAFE;
  /* numbers */
  c->max_retries = o->max_retries < 0 ? 0 : o->max_retries ? o->max_retries : 8;
  c->retry_timeout_ms = o->retry_timeout_ms > 0 ? o->retry_timeout_ms : 60000;
  c->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000;
  c->stall_timeout_ms = o->stall_timeout_ms > 0 ? o->stall_timeout_ms : 30000;
  c->request_timeout_ms = o->request_timeout_ms > 0 ? o->request_timeout_ms : 0;
  c->max_connections = o->max_connections > 0 ? DK_MIN(o->max_connections, 64) : 8;
  c->part_size = o->part_size ? o->part_size : (size_t)8 << 20;
  c->coalesce_gap = o->coalesce_gap ? o->coalesce_gap : (size_t)1 << 20;
  c->list_page_size = o->list_page_size > 0 ? DK_MIN(o->list_page_size, 1000) : 0;
  c->cancel = o->cancel;
  c->cancel_ctx = o->cancel_ctx;
cleanup:
  dk__free(a, pregion);
  dk__free(a, pendpoint);
  files_dispose(&f, a);
  if (st != DK_OK) dk_s3__conf_dispose(c, a);
  return st;
}

/* ---- encoders ------------------------------------------------------------------------------ */

dk_status dk_s3__uri_encode(dk_buf *b, const char *s, size_t n, int keep_slash, dk_error *err) {
  static const char hex[] = "0123456789ABCDEF";
  DK_RETURN_NOT_OK(dk__buf_reserve(b, n, err));
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~' || (ch == '/' && keep_slash)) {
      DK_RETURN_NOT_OK(dk__buf_putc(b, (char)ch, err));
    } else {
      char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
      DK_RETURN_NOT_OK(dk__buf_append(b, e, 3, err));
    }
  }
  return DK_OK;
}

int64_t dk_s3__parse_iso8601_ms(const char *s) {
  int y, mo, d, h, mi, sec, n = 0;
  if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n == 0)
    return -1;
  int ms = 0;
  const char *p = s + n;
  if (*p == '.') {
    int digits = 0;
    for (p++; isdigit((unsigned char)*p); p++, digits++)
      if (digits < 3) ms = ms * 10 + (*p - '0');
    for (; digits < 3; digits++) ms *= 10;
  }
  struct tm tm = {0};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  time_t t = timegm(&tm);
  if (t == (time_t)-1) return -1;
  return (int64_t)t * 1000 + ms;
}

dk_status dk_s3__start_after(dk_buf *b, const char *start, dk_error *err) {
  size_t n = strlen(start);
  if (n == 0) return DK_OK;
  size_t cut = n - 1;
  while (cut > 0 && ((unsigned char)start[cut] & 0xC0) == 0x80) cut--; /* UTF-8 continuation */
  return dk__buf_append(b, start, cut, err);
}
