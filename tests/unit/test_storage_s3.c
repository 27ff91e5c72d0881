/* test_storage_s3.c — the S3 backend's parts that need no server: option names, the
** environment and shared-file chains, percent-encoding, start-after, ISO 8601, S3 error
** documents, and a refused connection. The server-facing behaviour is tested against a real
** S3 server by tests/python/test_s3_*.py. */
#ifdef DK_WITH_S3
#include <stdlib.h>
#include <unistd.h>

#include "storage/s3/s3.h"
#include "test.h"

static const char *enc(int keep_slash, const char *s) {
  static char out[256];
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_s3__uri_encode(&b, s, strlen(s), keep_slash, NULL);
  snprintf(out, sizeof out, "%s", b.data ? b.data : "");
  dk__buf_dispose(&b);
  return out;
}

DK_TEST(storage_s3__encoding) {
  CHECK_EQ_STR(enc(1, "t/_delta_log/00.json"), "t/_delta_log/00.json");
  CHECK_EQ_STR(enc(1, "a b/c=d&e+f~g"), "a%20b/c%3Dd%26e%2Bf~g");
  CHECK_EQ_STR(enc(0, "x/y"), "x%2Fy");
  CHECK_EQ_STR(enc(1, "\xc3\xbc%"), "%C3%BC%25");
  char s[] = "a%20b+c%2fd%zz%4";
  size_t n = dk__pct_decode_into(s, s, strlen(s), DK__PCT_PLUS_SPACE);
  CHECK_EQ_INT(n, strlen("a b c/d%zz%4"));
  CHECK_EQ_STR(s, "a b c/d%zz%4");
}

static const char *start_after(const char *s) {
  static char out[64];
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_s3__start_after(&b, s, NULL);
  snprintf(out, sizeof out, "%.*s", (int)b.len, b.data ? b.data : "");
  dk__buf_dispose(&b);
  return out;
}

DK_TEST(storage_s3__start_after_is_below_start) {
  CHECK_EQ_STR(start_after("00000000000000000010.json"), "00000000000000000010.jso");
  CHECK_EQ_STR(start_after("a"), "");
  CHECK_EQ_STR(start_after("a\xc3\xa9"), "a"); /* a whole UTF-8 character goes */
  CHECK_EQ_STR(start_after(""), "");
}

DK_TEST(storage_s3__iso8601) {
  CHECK_EQ_INT(dk_s3__parse_iso8601_ms("2009-10-12T17:50:30.000Z"), 1255369830000LL);
  CHECK_EQ_INT(dk_s3__parse_iso8601_ms("2009-10-12T17:50:30.5Z"), 1255369830500LL);
  CHECK_EQ_INT(dk_s3__parse_iso8601_ms("2009-10-12T17:50:30Z"), 1255369830000LL);
  CHECK_EQ_INT(dk_s3__parse_iso8601_ms("yesterday"), -1);
}

DK_TEST(storage_s3__ini) {
  const char *text =
      "# comment\n[default]\naws_access_key_id = AK1\n  nested = no\n"
      "[profile  p2]\nregion=eu-west-1\ns3 =\n  addressing_style = path\n"
      "endpoint_url = http://h:1\n; other\n[p3]\nAWS_SECRET_ACCESS_KEY =  s3cr=t  \r\n";
  int found = 0;
  char *v = dk_s3__ini_get(text, "default", "aws_access_key_id", &found, NULL);
  CHECK(found);
  CHECK_EQ_STR(v, "AK1");
  free(v);
  CHECK(!dk_s3__ini_get(text, "default", "nested", NULL, NULL));
  v = dk_s3__ini_get(text, "profile p2", "region", NULL, NULL);
  CHECK_EQ_STR(v, "eu-west-1");
  free(v);
  CHECK(!dk_s3__ini_get(text, "profile p2", "addressing_style", NULL, NULL));
  v = dk_s3__ini_get(text, "profile p2", "endpoint_url", NULL, NULL);
  CHECK_EQ_STR(v, "http://h:1");
  free(v);
  v = dk_s3__ini_get(text, "p3", "aws_secret_access_key", NULL, NULL);
  CHECK_EQ_STR(v, "s3cr=t");
  free(v);
  found = 0;
  CHECK(!dk_s3__ini_get(text, "nope", "x", &found, NULL));
  CHECK(!found);
}

DK_TEST(storage_s3__options_by_name) {
  dk_s3_options o = {0};
  dk_error err = {0};
  CHECK_OK(dk_s3_options_set(&o, "AWS_ACCESS_KEY_ID", "ak", &err), &err);
  CHECK_OK(dk_s3_options_set(&o, "aws_secret_access_key", "sk", &err), &err);
  CHECK_OK(dk_s3_options_set(&o, "aws_endpoint_url", "http://127.0.0.1:9", &err), &err);
  CHECK_OK(dk_s3_options_set(&o, "aws_allow_http", "True", &err), &err);
  CHECK_OK(dk_s3_options_set(&o, "region", "eu-central-1", &err), &err);
  CHECK_OK(dk_s3_options_set(&o, "aws_virtual_hosted_style_request", "false", &err), &err);
  CHECK_OK(dk_s3_options_set(&o, "connect_timeout", "2.5s", &err), &err);
  CHECK_OK(dk_s3_options_set(&o, "timeout", "250ms", &err), &err);
  CHECK_OK(dk_s3_options_set(&o, "dk_s3_part_size", "6MiB", &err), &err);
  CHECK_OK(dk_s3_options_set(&o, "aws_s3_allow_unsafe_rename", "true", &err), &err);
  CHECK_EQ_INT(o.version, DK_S3_OPTIONS_VERSION);
  CHECK_EQ_STR(o.access_key_id, "ak");
  CHECK_EQ_STR(o.region, "eu-central-1");
  CHECK_EQ_INT(o.allow_http, 1);
  CHECK_EQ_INT(o.addressing, DK_S3_ADDRESSING_PATH);
  CHECK_EQ_INT(o.connect_timeout_ms, 2500);
  CHECK_EQ_INT(o.request_timeout_ms, 250);
  CHECK_EQ_INT(o.part_size, 6 << 20);
  CHECK_EQ_INT(o.put_if_absent, DK_S3_PUT_IF_ABSENT_UNSAFE);
  CHECK_STATUS(dk_s3_options_set(&o, "aws_allow_http", "perhaps", &err), DK_INVALID);
  dk_error e2 = {0};
  CHECK_STATUS(dk_s3_options_set(&o, "aws_bogus", "1", &e2), DK_INVALID);
  CHECK(strstr(e2.message, "unknown storage option 'aws_bogus'"));
}

static dk_status resolve(dk_s3__conf *c, dk_s3_options *o, dk_error *err) {
  o->version = DK_S3_OPTIONS_VERSION;
  return dk_s3__conf_resolve(c, o, NULL, err);
}

DK_TEST(storage_s3__resolve_defaults_and_addressing) {
  dk_s3__conf c;
  dk_error err = {0};
  dk_s3_options o = {.bucket = "my-bucket", .skip_env = 1, .region = "eu-west-1"};
  CHECK_OK(resolve(&c, &o, &err), &err);
  CHECK_EQ_STR(c.host, "s3.eu-west-1.amazonaws.com");
  CHECK_EQ_STR(c.scheme, "https");
  CHECK_EQ_INT(c.virtual_hosted, 1);
  CHECK(c.access_key_id == NULL); /* anonymous */
  CHECK(strstr(c.cred_source, "anonymous"));
  CHECK_EQ_INT(c.part_size, 8 << 20);
  dk_s3__conf_dispose(&c, NULL);
  dk_s3_options o2 = {.bucket = "my.dotted.bucket", .skip_env = 1};
  CHECK_OK(resolve(&c, &o2, &err), &err);
  CHECK_EQ_INT(c.virtual_hosted, 0); /* not a DNS label: path-style */
  CHECK_EQ_STR(c.region, "us-east-1");
  dk_s3__conf_dispose(&c, NULL);
  dk_s3_options o3 = {.bucket = "b", .skip_env = 1, .endpoint = "http://127.0.0.1:9000/base/",
                      .allow_http = 1, .access_key_id = "a", .secret_access_key = "s"};
  CHECK_OK(resolve(&c, &o3, &err), &err);
  CHECK_EQ_STR(c.host, "127.0.0.1:9000");
  CHECK_EQ_STR(c.base_path, "/base");
  CHECK_EQ_INT(c.virtual_hosted, 0);
  CHECK_EQ_STR(c.cred_source, "the storage options");
  dk_s3__conf_dispose(&c, NULL);
  dk_s3_options bad[] = {
      {.skip_env = 1},
      {.bucket = "b", .skip_env = 1, .endpoint = "http://127.0.0.1:9000"},
      {.bucket = "b", .skip_env = 1, .endpoint = "ftp://x"},
      {.bucket = "b", .skip_env = 1, .access_key_id = "only-id"},
      {.bucket = "b", .skip_env = 1, .part_size = 1 << 20},
      {.bucket = "b/c", .skip_env = 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    dk_error e = {0};
    CHECK_STATUS(resolve(&c, &bad[i], &e), DK_INVALID);
    CHECK(e.message[0]);
  }
  dk_s3_options newer = {.version = DK_S3_OPTIONS_VERSION + 1, .bucket = "b"};
  dk_storage *s = NULL;
  CHECK_STATUS(dk_storage_s3_new(&s, &newer, NULL, &err), DK_INVALID);
  CHECK(s == NULL);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

DK_TEST(storage_s3__resolve_env_and_profiles) {
  const char *dir = dk_test_tmpdir();
  char cred[4200], conf[4200];
  snprintf(cred, sizeof cred, "%s/credentials", dir);
  snprintf(conf, sizeof conf, "%s/config", dir);
  write_file(cred, "[default]\naws_access_key_id=DEF\naws_secret_access_key=DEFS\n"
                   "[tok]\naws_access_key_id=T\naws_secret_access_key=TS\naws_session_token=TT\n"
                   "[proc]\ncredential_process = /bin/false\n");
  write_file(conf, "[default]\nregion = ap-south-1\n[profile tok]\nregion=eu-north-1\n"
                   "endpoint_url = http://localhost:7\n");
  static const char *vars[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                               "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
                               "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ALLOW_HTTP",
                               "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
                               "AWS_S3_ALLOW_UNSAFE_RENAME", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST"};
  char *saved[sizeof vars / sizeof vars[0]];
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    saved[i] = v ? strdup(v) : NULL;
    unsetenv(vars[i]);
  }
  setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
  setenv("AWS_CONFIG_FILE", conf, 1);
  dk_s3__conf c;
  dk_error err = {0};
  dk_s3_options o = {.bucket = "b"};
  int ok = 1;
  /* the default profile */
  if (resolve(&c, &o, &err) != DK_OK) ok = 0;
  else {
    ok &= !strcmp(c.access_key_id, "DEF") && !strcmp(c.region, "ap-south-1") && !c.session_token;
    ok &= strstr(c.cred_source, "profile 'default'") != NULL;
    dk_s3__conf_dispose(&c, NULL);
  }
  /* environment keys win over the default profile; AWS_REGION over the profile's region */
  setenv("AWS_ACCESS_KEY_ID", "ENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "ENVS", 1);
  setenv("AWS_SESSION_TOKEN", "ENVT", 1);
  setenv("AWS_REGION", "sa-east-1", 1);
  if (resolve(&c, &o, &err) != DK_OK) ok = 0;
  else {
    ok &= !strcmp(c.access_key_id, "ENV") && !strcmp(c.session_token, "ENVT") &&
          !strcmp(c.region, "sa-east-1");
    dk_s3__conf_dispose(&c, NULL);
  }
  /* a profile named in the options wins over the environment's keys */
  unsetenv("AWS_REGION");
  setenv("AWS_ALLOW_HTTP", "true", 1);
  dk_s3_options ot = {.bucket = "b", .profile = "tok"};
  if (resolve(&c, &ot, &err) != DK_OK) ok = 0;
  else {
    ok &= !strcmp(c.access_key_id, "T") && !strcmp(c.session_token, "TT") &&
          !strcmp(c.region, "eu-north-1") && !strcmp(c.host, "localhost:7") &&
          !strcmp(c.scheme, "http");
    dk_s3__conf_dispose(&c, NULL);
  }
  dk_error e1 = {0}, e2 = {0};
  dk_s3_options op = {.bucket = "b", .profile = "proc"};
  dk_status s1 = resolve(&c, &op, &e1);
  dk_s3_options on = {.bucket = "b", .profile = "absent"};
  dk_status s2 = resolve(&c, &on, &e2);
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    if (saved[i]) setenv(vars[i], saved[i], 1);
    else unsetenv(vars[i]);
    free(saved[i]);
  }
  CHECK(ok);
  CHECK_EQ_INT(s1, DK_UNSUPPORTED);
  CHECK(strstr(e1.message, "credential_process"));
  CHECK_EQ_INT(s2, DK_INVALID);
  CHECK(strstr(e2.message, "profile 'absent' is in neither"));
}

DK_TEST(storage_s3__error_document) {
  const char *doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
                    "<Message>The specified key does not exist &amp; never did.</Message>"
                    "<Key>a/b</Key><RequestId>4442587FB7D0A2F9</RequestId></Error>";
  dk_s3__xml_error e;
  CHECK(dk_s3__xml_error_parse(doc, strlen(doc), &e, NULL));
  CHECK_EQ_STR(e.code, "NoSuchKey");
  CHECK_EQ_STR(e.message, "The specified key does not exist & never did.");
  CHECK_EQ_STR(e.request_id, "4442587FB7D0A2F9");
  CHECK(!dk_s3__xml_error_parse("not xml", 7, &e, NULL));
  CHECK(!dk_s3__xml_error_parse("<Error><Code>", 13, &e, NULL)); /* truncated */
}

DK_TEST(storage_s3__connection_refused_is_a_clear_error) {
  dk_s3_options o = {.version = DK_S3_OPTIONS_VERSION, .bucket = "b", .skip_env = 1,
                     .endpoint = "http://127.0.0.1:1", .allow_http = 1, .max_retries = 1,
                     .connect_timeout_ms = 1000, .access_key_id = "a", .secret_access_key = "s"};
  dk_storage *s = NULL;
  dk_error err = {0};
  CHECK_OK(dk_storage_s3_new(&s, &o, NULL, &err), &err);
  dk_file_info fi;
  dk_status st = s->stat(s, "/t/x", &fi, &err);
  s->free(s);
  CHECK_EQ_INT(st, DK_IO);
  CHECK(strstr(err.message, "s3 HEAD s3://b/t/x"));
  CHECK(strstr(err.message, "after 2 tries"));
}
#endif
