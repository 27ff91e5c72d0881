/*
** cmd_changes.c — `dk changes TABLE --from V [--to W] ...`: the change data feed of a version
** (or timestamp) range through dk_changes; `dk tail TABLE [--from V] ...`: the table as a
** stream (dk_stream), printing each micro-batch's rows as commits arrive until Ctrl-C (or,
** with --once, until it has caught up). Rows print in the encoding of tools/cli/print.h.
*/
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "dk/changes.h"
#include "dk/expr.h"
#include "print.h"

static int fail(const char *cmd, const dk_error *err) {
  fprintf(stderr, "dk %s: %s: %s\n", cmd, dk_status_str(err->code), err->message);
  return 1;
}

static int parse_format(const char *cmd, const char *f, int *out) {
  if (!strcmp(f, "jsonl")) *out = CLI_PRINT_JSONL;
  else if (!strcmp(f, "csv")) *out = CLI_PRINT_CSV;
  else if (!strcmp(f, "table")) *out = CLI_PRINT_TABLE;
  else {
    fprintf(stderr, "dk %s: unknown format '%s'\n", cmd, f);
    return -1;
  }
  return 0;
}

static int parse_version(const char *cmd, const char *opt, const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || v < 0 || errno) {
    fprintf(stderr, "dk %s: bad %s '%s'\n", cmd, opt, s);
    return -1;
  }
  *out = v;
  return 0;
}

/* "a,b.c" split in place into cols (room for strlen + 1 entries). */
static size_t split_columns(char *buf, const char **cols) {
  size_t n = 0;
  for (char *p = strtok(buf, ","); p; p = strtok(NULL, ",")) cols[n++] = p;
  return n;
}

/* Options both commands share. The range: --from V / --from-timestamp TS (both), --to W /
** --to-timestamp TS (changes only); kinds are DK_BOUND_* (DEFAULT: not given). */
typedef struct common_opts {
  const char *table, *columns, *where;
  int format;
  bool with_end;
  dk_bound_kind from_kind, to_kind;
  int64_t from, to;
  char *colbuf;
  const char **cols;
  size_t n_cols;
  dk_expr *filter;
} common_opts;

/* Consumes argv[*i] if it is a shared option; 1 when taken, 0 when not, -1 on a bad value. */
static int common_arg(const char *cmd, common_opts *c, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  bool end = c->with_end && !strncmp(a, "--to", 4);
  if ((!strcmp(a, "--from") || (end && !strcmp(a, "--to"))) && *i + 1 < argc) {
    *(end ? &c->to_kind : &c->from_kind) = DK_BOUND_VERSION;
    if (parse_version(cmd, a, argv[++*i], end ? &c->to : &c->from)) return -1;
  } else if ((!strcmp(a, "--from-timestamp") || (end && !strcmp(a, "--to-timestamp"))) &&
             *i + 1 < argc) {
    *(end ? &c->to_kind : &c->from_kind) = DK_BOUND_TIMESTAMP;
    if (dk_cli_parse_ts(argv[++*i], end ? &c->to : &c->from)) {
      fprintf(stderr, "dk %s: bad %s '%s'\n", cmd, a, argv[*i]);
      return -1;
    }
  } else if (!strcmp(a, "--columns") && *i + 1 < argc) {
    c->columns = argv[++*i];
  } else if (!strcmp(a, "--where") && *i + 1 < argc) {
    c->where = argv[++*i];
  } else if (!strcmp(a, "--format") && *i + 1 < argc) {
    if (parse_format(cmd, argv[++*i], &c->format)) return -1;
  } else if (!strcmp(a, "--threads") && *i + 1 < argc) {
    if (dk_cli_threads_option(argv[++*i])) return -1;
  } else if (!strcmp(a, "--storage-option") && *i + 1 < argc) {
    if (dk_cli_storage_option(argv[++*i])) return -1;
  } else if (a[0] == '-' && a[1]) {
    return 0;
  } else if (!c->table) {
    c->table = a;
  } else {
    fprintf(stderr, "dk %s: unexpected argument '%s'\n", cmd, a);
    return -1;
  }
  return 1;
}

/* Columns, filter and the table (*t); 2 for a malformed --where (a usage error), 1 on other
** errors. */
static int common_open(const char *cmd, common_opts *c, dk_table **t) {
  if (c->columns) {
    c->colbuf = strdup(c->columns);
    c->cols = calloc(strlen(c->columns) + 1, sizeof *c->cols);
    if (!c->colbuf || !c->cols) return 1;
    c->n_cols = split_columns(c->colbuf, c->cols);
  }
  dk_error err;
  dk_error_init(&err);
  if (c->where && dk_expr_parse(&c->filter, c->where, &err)) {
    fail(cmd, &err);
    return 2;
  }
  return dk_cli_open_table(c->table, t) ? 1 : 0;
}

static void common_free(common_opts *c) {
  dk_expr_free(c->filter);
  free(c->cols);
  free(c->colbuf);
}

/* ---- dk changes ------------------------------------------------------------------------- */

static int print_files(const dk_changes *c) {
  static const char *const src[] = {"", "cdc", "add", "remove", "dv_deleted", "dv_restored"};
  dk_error err;
  dk_error_init(&err);
  for (int64_t i = 0; i < dk_changes_num_files(c); i++) {
    dk_change_file f;
    if (dk_changes_file_get(&f, c, i, &err)) return fail("changes", &err);
    printf("%" PRId64 "\t%s\t%s\t%" PRId64 "%s\n", f.commit_version,
           src[f.source >= 1 && f.source <= 5 ? f.source : 0], f.entry.path, f.entry.size,
           f.keep_dv ? "\tdv-difference" : "");
  }
  return 0;
}

int dk_cli_changes(int argc, char **argv) {
  common_opts c;
  memset(&c, 0, sizeof c);
  c.with_end = true;
  dk_changes_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_CHANGES_OPTIONS_VERSION;
  int files = 0, bad = 0;
  for (int i = 0; i < argc && !bad; i++) {
    const char *a = argv[i];
    int k = common_arg("changes", &c, argc, argv, &i);
    if (k < 0) bad = 1;
    if (k) continue;
    if (!strcmp(a, "--files")) {
      files = 1;
    } else {
      fprintf(stderr, "dk changes: unknown option '%s'\n", a);
      bad = 1;
    }
  }
  o.start_kind = c.from_kind;
  o.start = c.from;
  o.end_kind = c.to_kind;
  o.end = c.to;
  if (bad || !c.table || o.start_kind == DK_BOUND_DEFAULT) {
    if (!bad && c.table) fprintf(stderr, "dk changes: --from or --from-timestamp is required\n");
    return dk_cli_usage("changes");
  }
  dk_table *t = NULL;
  dk_changes *ch = NULL;
  int rc = common_open("changes", &c, &t);
  dk_error err;
  dk_error_init(&err);
  if (!rc) {
    o.columns = c.cols;
    o.n_columns = c.n_cols;
    o.filter = c.filter;
    if (dk_changes_new(&ch, t, &o, &err)) rc = fail("changes", &err);
  }
  if (!rc && files) {
    rc = print_files(ch);
  } else if (!rc) {
    struct ArrowArrayStream st;
    if (dk_changes_read(&st, ch, &err)) {
      rc = fail("changes", &err);
    } else {
      rc = dk_cli_print_stream(&st, c.format, -1, "changes", NULL);
      st.release(&st);
    }
  }
  dk_changes_free(ch);
  dk_table_free(t);
  common_free(&c);
  return rc;
}

/* ---- dk tail ---------------------------------------------------------------------------- */

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static void print_offset(const char *tag, const dk_stream_offset *o, const char *id) {
  char buf[512];
  dk_stream_offset_json(buf, sizeof buf, o, id);
  fprintf(stderr, "%s %s\n", tag, buf);
  fflush(stderr);
}

int dk_cli_tail(int argc, char **argv) {
  common_opts c;
  memset(&c, 0, sizeof c);
  dk_stream_options o;
  memset(&o, 0, sizeof o);
  o.version = DK_STREAM_OPTIONS_VERSION;
  int bad = 0, once = 0, offsets = 0, snapshot = 0;
  double interval = 1.0;
  for (int i = 0; i < argc && !bad; i++) {
    const char *a = argv[i];
    int k = common_arg("tail", &c, argc, argv, &i);
    if (k < 0) bad = 1;
    if (k) continue;
    if (!strcmp(a, "--snapshot")) {
      snapshot = 1;
    } else if (!strcmp(a, "--resume") && i + 1 < argc) {
      o.resume_offset = argv[++i];
    } else if (!strcmp(a, "--max-files") && i + 1 < argc) {
      bad = parse_version("tail", a, argv[++i], &o.max_files) || o.max_files == 0;
    } else if (!strcmp(a, "--max-bytes") && i + 1 < argc) {
      bad = parse_version("tail", a, argv[++i], &o.max_bytes) || o.max_bytes == 0;
    } else if (!strcmp(a, "--interval") && i + 1 < argc) {
      char *end;
      interval = strtod(argv[++i], &end);
      bad = *end || interval < 0.01 || interval > 3600;
      if (bad) fprintf(stderr, "dk tail: bad --interval '%s'\n", argv[i]);
    } else if (!strcmp(a, "--changes")) {
      o.change_data_feed = 1;
    } else if (!strcmp(a, "--ignore-deletes")) {
      o.ignore_deletes = 1;
    } else if (!strcmp(a, "--ignore-changes")) {
      o.ignore_changes = 1;
    } else if (!strcmp(a, "--skip-change-commits")) {
      o.skip_change_commits = 1;
    } else if (!strcmp(a, "--exclude") && i + 1 < argc) {
      o.exclude_regex = argv[++i];
    } else if (!strcmp(a, "--once")) {
      once = 1;
      o.available_now = 1;
    } else if (!strcmp(a, "--print-offsets")) {
      offsets = 1;
    } else {
      fprintf(stderr, "dk tail: unknown option '%s'\n", a);
      bad = 1;
    }
  }
  /* --from / --from-timestamp win over --snapshot; neither: from the latest version */
  o.start = c.from_kind == DK_BOUND_VERSION     ? DK_STREAM_FROM_VERSION
            : c.from_kind == DK_BOUND_TIMESTAMP ? DK_STREAM_FROM_TIMESTAMP
            : snapshot                          ? DK_STREAM_FROM_SNAPSHOT
                                                : DK_STREAM_FROM_LATEST;
  if (c.from_kind == DK_BOUND_VERSION) o.starting_version = c.from;
  if (c.from_kind == DK_BOUND_TIMESTAMP) o.starting_timestamp_ms = c.from;
  if (bad || !c.table) return dk_cli_usage("tail");
  dk_table *t = NULL;
  dk_stream *s = NULL;
  int rc = common_open("tail", &c, &t);
  dk_error err;
  dk_error_init(&err);
  if (!rc) {
    o.columns = c.cols;
    o.n_columns = c.n_cols;
    o.filter = c.filter;
    if (dk_stream_open(&s, t, &o, &err)) rc = fail("tail", &err);
  }
  if (!rc) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
  }
  int first = 1;
  while (!rc && !g_stop) {
    dk_stream_batch *b = NULL;
    if (dk_stream_next(&b, s, &err)) {
      rc = fail("tail", &err);
      break;
    }
    if (!b) {
      if (once) break;
      struct timespec ts = {(time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9)};
      nanosleep(&ts, NULL); /* a signal ends the sleep early */
      continue;
    }
    struct ArrowArrayStream st;
    if (dk_stream_batch_read(&st, b, &err)) {
      rc = fail("tail", &err);
    } else {
      rc = dk_cli_print_stream(&st, c.format | (first ? 0 : CLI_PRINT_NO_HEADER), -1, "tail",
                               NULL);
      st.release(&st);
      fflush(stdout);
      first = 0;
    }
    if (!rc && offsets) {
      dk_stream_offset e;
      dk_stream_batch_end(&e, b);
      print_offset("offset", &e, dk_stream_table_id(s));
    }
    dk_stream_batch_free(b);
  }
  dk_stream_free(s);
  dk_table_free(t);
  common_free(&c);
  return rc;
}
