/*
** changes.c — the change data feed of a version range (include/dk/changes.h dk_changes):
** resolving the range from versions or timestamps and checking it as delta-spark does
** (commands/cdc/CDCReaderBase.scala getCDCRelation, verifyStartingVersion /
** verifyEndingVersion; CDCReader.changesToDF: change data recorded at the start and never
** turned off inside, every schema in the range readable with the read schema), then the
** change files of each commit (plan.c) pruned by the filter, read by read.c.
**
** Follows PROTOCOL.md "Change Data Files", "Add CDC File", "Deletion Vectors" and
** "In-Commit Timestamps"; ../shared/reference/spark-v2-connector-spec.md §6.
*/
#include <inttypes.h>
#include <string.h>

#include "changes/changes_int.h"
#include "codec/json/json.h"
#include "log/timestamps.h"
#include "protocol/table_config.h"
#include "snapshot/access.h"
#include "snapshot/snapshot_int.h"

struct dk_changes {
  int refs; /* atomic: the handle plus one per open stream */
  const dk_allocator *alloc;
  dk_snapshot *read_snap;
  int64_t start, end;
  dk_changes__reader *reader;
  dk_changes__files files;
};

/* ---- timestamps ------------------------------------------------------------------------- */

/* The commit times of a table's commits, with the latest snapshot's ICT rule. */
static dk_status times_open(dk__commit_times *ct, dk__log *lg, dk_table *t,
                            const dk_snapshot *latest, dk_error *err) {
  *lg = dk_snapshot__log(t);
  return dk_log__commit_times_open(ct, lg, dk_protocol__ict_from(&latest->config), err);
}

dk_status dk_changes__version_from_timestamp(int64_t *out, int64_t *latest_out, dk_table *t,
                                             const dk_snapshot *latest, int64_t ts,
                                             dk_error *err) {
  dk__log lg;
  dk__commit_times ct;
  dk_status st = times_open(&ct, &lg, t, latest, err);
  int64_t v = -1, first_t = 0, last_t = 0;
  if (!st) st = dk_log__commit_time(&first_t, &lg, &ct, 0, DK__ICT_UNREAD, err);
  if (!st) st = dk_log__commit_time(&last_t, &lg, &ct, ct.n - 1, DK__ICT_UNREAD, err);
  if (!st) {
    *latest_out = ct.c[ct.n - 1]->version;
    if (ts <= first_t) {
      v = ct.c[0]->version;
    } else if (ts > last_t) {
      v = *latest_out + 1;
    } else {
      st = dk_log__version_at_timestamp(&v, &lg, &ct, ts, err);
      int64_t tv = 0;
      size_t i = st ? ct.n : dk_log__commit_index(&ct, v);
      if (!st && i < ct.n) st = dk_log__commit_time(&tv, &lg, &ct, i, DK__ICT_UNREAD, err);
      if (!st && tv < ts) v++; /* the first commit at or after ts is the next one */
    }
  }
  dk_log__commit_times_dispose(&ct);
  if (!st) *out = v;
  return st;
}

/* The last version whose commit time is at or before ts (an end bound). */
static dk_status version_until_timestamp(int64_t *out, dk_table *t, const dk_snapshot *latest,
                                         int64_t ts, dk_error *err) {
  dk__log lg;
  dk__commit_times ct;
  dk_status st = times_open(&ct, &lg, t, latest, err);
  if (!st) {
    st = dk_log__version_at_timestamp(out, &lg, &ct, ts, err);
    if (st == DK_OUT_OF_RANGE) {
      int64_t first_t = 0;
      bool before = dk_log__commit_time(&first_t, &lg, &ct, 0, DK__ICT_UNREAD, NULL) == DK_OK &&
                    ts < first_t;
      dk__error_prefix(err, "change data feed: end timestamp %" PRId64 " (%s)", ts,
                       before ? "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION"
                              : "DELTA_TIMESTAMP_GREATER_THAN_COMMIT");
    }
  }
  dk_log__commit_times_dispose(&ct);
  return st;
}

/* ---- the handle ------------------------------------------------------------------------- */

static void changes_unref(void *p) {
  dk_changes *c = p;
  if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  dk_changes__reader_free(c->reader);
  dk_snapshot_free(c->read_snap);
  dk_changes__files_dispose(&c->files);
  dk__free(c->alloc, c);
}

void dk_changes_free(dk_changes *c) { changes_unref(c); }

int64_t dk_changes_start_version(const dk_changes *c) { return c->start; }
int64_t dk_changes_end_version(const dk_changes *c) { return c->end; }
int64_t dk_changes_schema_version(const dk_changes *c) {
  return dk_snapshot_version(c->read_snap);
}
int64_t dk_changes_num_files(const dk_changes *c) { return (int64_t)c->files.n; }

dk_status dk_changes_schema(struct ArrowSchema *out, const dk_changes *c, dk_error *err) {
  return dk_changes__reader_schema(out, c->reader, err);
}

dk_status dk_changes_file_get(dk_change_file *out, const dk_changes *c, int64_t i,
                              dk_error *err) {
  return dk_changes__files_get(out, &c->files, i, "change data feed", err);
}

dk_status dk_changes_read_files(struct ArrowArrayStream *out, dk_changes *c, int64_t first,
                                int64_t n, dk_error *err) {
  return dk_changes__files_read(out, c->reader, &c->files, first, n, &c->refs, changes_unref, c,
                                "change data feed", err);
}

dk_status dk_changes_read(struct ArrowArrayStream *out, dk_changes *c, dk_error *err) {
  return dk_changes_read_files(out, c, 0, (int64_t)c->files.n, err);
}

/* ---- planning --------------------------------------------------------------------------- */

bool dk_changes__is_noop_merge(const dk_action_commit_info *ci, const dk_allocator *alloc) {
  if (!ci || !ci->operation || strcmp(ci->operation, "MERGE") != 0 || !ci->json) return false;
  dk_arena ar;
  dk__arena_init(&ar, alloc, 0);
  dk_json_value *root = NULL;
  bool noop = false;
  if (dk__json_parse(&root, &ar, ci->json, strlen(ci->json), NULL) == DK_OK) {
    const dk_json_value *m = dk__json_get(root, "operationMetrics");
    static const char *const keys[] = {"numTargetRowsInserted", "numTargetRowsUpdated",
                                       "numTargetRowsDeleted"};
    noop = m != NULL;
    for (int i = 0; noop && i < 3; i++) {
      size_t len = 0;
      const char *s = dk__json_as_str(dk__json_get(m, keys[i]), &len);
      noop = s && len == 1 && s[0] == '0';
    }
  }
  dk__arena_dispose(&ar);
  return noop;
}

dk_status dk_changes__file_of_planned(dk_change_file *out, const dk_changes__planned *p,
                                      int64_t version, int64_t timestamp) {
  memset(out, 0, sizeof *out);
  out->commit_version = version;
  out->commit_timestamp = timestamp;
  out->source = (dk_change_source)p->source;
  if (p->b) {
    /* a DV difference: the other action's file and DV, only the rows a's DV deletes */
    out->entry = p->b->entry;
    out->keep_dv = p->a->entry.dv;
  } else {
    out->entry = p->a->entry;
  }
  return DK_OK;
}

/* The read-compatibility check of one schema in the range with the read schema (delta-spark
** CDCReaderBase.checkBatchCdfReadSchemaIncompatibility; versions are never after the read
** schema's in a batch read). */
static dk_status check_schema(const dk_changes__meta *read, const dk_changes__meta *m,
                              int64_t mversion, int64_t start, int64_t end, bool is_change,
                              const dk_allocator *alloc, dk_error *err) {
  bool ok = true;
  DK_RETURN_NOT_OK(dk_changes__no_cm_schema_changes(&ok, read, m, alloc, err));
  if (ok) ok = dk_changes__read_compatible(m->schema, read->schema, true);
  if (ok) return DK_OK;
  return dk__error_set(err, DK_UNSUPPORTED,
                       "change data feed: versions %" PRId64 "..%" PRId64 " cannot be read with "
                       "the schema of the read version: %s at version %" PRId64 " is not "
                       "read-compatible with it (%s)",
                       start, end, is_change ? "the schema change" : "the data schema", mversion,
                       is_change ? "DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_SCHEMA_CHANGE"
                                 : "DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_DATA_SCHEMA");
}

static dk_status open_at(dk_snapshot **out, dk_table *t, int64_t v, dk_error *err) {
  dk_snapshot_options so;
  memset(&so, 0, sizeof so);
  so.version = DK_SNAPSHOT_OPTIONS_VERSION;
  so.at_version = v;
  so.metadata_only = 1;
  dk_status st = dk_snapshot_open(out, t, &so, err);
  if (st && v >= 0) dk__error_prefix(err, "change data feed: version %" PRId64, v);
  return st;
}

/* The commits [c->start, c->end]: checks, plans, prunes. */
static dk_status plan_range(dk_changes *c, dk_table *t, const dk_changes__meta *read_meta,
                            const dk_changes__meta *start_meta, dk_error *err) {
  dk_commit_range *range = NULL;
  DK_RETURN_NOT_OK(dk_commit_range_open(&range, t, c->start, c->end, err));
  dk_arena ar;
  dk__arena_init(&ar, c->alloc, 0);
  dk_changes__action *acts = NULL;
  size_t n_acts = 0, cap = 0, n = dk_commit_range_count(range);
  dk_status st = DK_OK;
  for (size_t i = 0; i < n && !st;) {
    int64_t v = dk_commit_range_action(range, i)->version;
    int64_t ts = dk_commit_range_timestamp(range, v);
    const dk_action_commit_info *ci = NULL;
    n_acts = 0;
    size_t j = i;
    for (; j < n && !st; j++) {
      const dk_action *a = dk_commit_range_action(range, j);
      if (a->version != v) break;
      if (a->kind == DK_ACTION_METADATA) {
        dk_changes__meta m;
        st = dk_changes__meta_of(&m, a->metadata, &ar, err);
        if (!st && !m.cdf)
          st = dk__error_set(err, DK_UNSUPPORTED,
                             "change data feed: no change data is recorded for version %" PRId64
                             " (delta.enableChangeDataFeed is off there) in the range %" PRId64
                             "..%" PRId64 " (DELTA_MISSING_CHANGE_DATA)",
                             v, c->start, c->end);
        if (!st && v > c->start)
          st = check_schema(read_meta, &m, v, c->start, c->end, true, c->alloc, err);
      } else if (a->kind == DK_ACTION_COMMIT_INFO) {
        ci = a->commit_info;
      } else if (a->kind == DK_ACTION_ADD || a->kind == DK_ACTION_REMOVE ||
                 a->kind == DK_ACTION_CDC) {
        if (n_acts == cap) {
          size_t nc = cap ? 2 * cap : 64;
          dk_changes__action *p = dk__realloc(c->alloc, acts, nc * sizeof *p);
          if (!p) {
            st = dk__error_set(err, DK_NOMEM, "out of memory (change data feed)");
            break;
          }
          acts = p;
          cap = nc;
        }
        dk_changes__action *x = &acts[n_acts++];
        x->kind = a->kind == DK_ACTION_ADD      ? DK_CHANGES__ADD
                  : a->kind == DK_ACTION_REMOVE ? DK_CHANGES__REMOVE
                                                : DK_CHANGES__CDC;
        x->data_change = a->file->data_change;
        dk_changes__entry_of_action(&x->entry, a->file);
        if (x->kind == DK_CHANGES__REMOVE && x->data_change && !a->file->has_partition_values &&
            dk_snapshot_metadata(c->read_snap)->n_partition_columns > 0)
          st = dk__error_set(err, DK_UNSUPPORTED,
                             "change data feed: version %" PRId64 " removes %s without its "
                             "partition values (DELTA_REMOVE_FILE_CDC_MISSING_EXTENDED_METADATA)",
                             v, a->file->path);
      }
    }
    dk_changes__planned *pl = NULL;
    size_t npl = 0;
    if (!st)
      st = dk_changes__plan_commit(&pl, &npl, acts, n_acts, dk_changes__is_noop_merge(ci, c->alloc), v,
                                   c->alloc, err);
    for (size_t k = 0; k < npl && !st; k++) {
      dk_change_file f;
      dk_changes__file_of_planned(&f, &pl[k], v, ts);
      bool pruned = false;
      st = dk_changes__reader_prunes(&pruned, c->reader, &f, err);
      if (!st && !pruned) st = dk_changes__files_push(&c->files, &f, "change data feed", err);
    }
    dk__free(c->alloc, pl);
    i = j;
  }
  if (!st) st = check_schema(read_meta, start_meta, c->start, c->start, c->end, false, c->alloc,
                             err);
  dk__free(c->alloc, acts);
  dk__arena_dispose(&ar);
  dk_commit_range_free(range);
  return st;
}

dk_status dk_changes_new(dk_changes **out, dk_table *t, const dk_changes_options *opts,
                         dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(!t || !opts, DK_INVALID, err, "dk_changes_new: NULL table or options");
  DK_CHECK_OPTIONS_VERSION(opts, DK_CHANGES_OPTIONS_VERSION, "dk_changes_new", err);
  dk_changes_options o = *opts;
  DK_RETURN_IF(o.start_kind != DK_BOUND_VERSION && o.start_kind != DK_BOUND_TIMESTAMP,
               DK_INVALID, err,
               "change data feed: a start version or timestamp is required "
               "(DELTA_NO_START_FOR_CDC_READ)");
  DK_RETURN_IF(o.end_kind != DK_BOUND_DEFAULT && o.end_kind != DK_BOUND_VERSION &&
                   o.end_kind != DK_BOUND_TIMESTAMP,
               DK_INVALID, err, "change data feed: bad end bound kind %d", (int)o.end_kind);
  DK_RETURN_IF(o.start_kind == DK_BOUND_VERSION && o.start < 0, DK_INVALID, err,
               "change data feed: start version %" PRId64 " is negative", o.start);
  DK_RETURN_IF(o.end_kind == DK_BOUND_VERSION && o.end < 0, DK_INVALID, err,
               "change data feed: end version %" PRId64 " is negative", o.end);

  dk_snapshot *latest = NULL, *start_snap = NULL;
  dk_changes *c = NULL;
  dk_arena ar;
  dk__arena_init(&ar, NULL, 0);
  dk_status st;
  DK_CHECK_GOTO(open_at(&latest, t, -1, err));
  int64_t lv = dk_snapshot_version(latest);
  /* the bounds (start first, as Spark resolves them) */
  int64_t start = o.start, end = lv, dummy;
  if (o.start_kind == DK_BOUND_TIMESTAMP) {
    DK_CHECK_GOTO(dk_changes__version_from_timestamp(&start, &dummy, t, latest, o.start, err));
    if (start > lv) {
      st = dk__error_set(err, DK_OUT_OF_RANGE,
                         "change data feed: start timestamp %" PRId64 " is after the latest "
                         "commit (version %" PRId64 ") (DELTA_TIMESTAMP_GREATER_THAN_COMMIT)",
                         o.start, lv);
      goto cleanup;
    }
  }
  if (o.end_kind == DK_BOUND_VERSION) end = o.end;
  if (o.end_kind == DK_BOUND_TIMESTAMP)
    DK_CHECK_GOTO(version_until_timestamp(&end, t, latest, o.end, err));
  if (start > lv) {
    st = dk__error_set(err, DK_OUT_OF_RANGE,
                       "change data feed: start version %" PRId64 " is after the latest version "
                       "%" PRId64 " (DELTA_CDC_START_VERSION_AFTER_LATEST)",
                       start, lv);
    goto cleanup;
  }
  bool empty = false;
  if (o.start_kind == DK_BOUND_TIMESTAMP && o.end_kind == DK_BOUND_TIMESTAMP) {
    if (o.start > o.end) {
      st = dk__error_set(err, DK_INVALID,
                         "change data feed: the range from start %" PRId64 " to end %" PRId64
                         " is invalid: the end is before the start (DELTA_INVALID_CDC_RANGE)",
                         start, end);
      goto cleanup;
    }
    empty = end == start - 1; /* both between the same two commits */
  }
  if (!empty && end < start) {
    st = dk__error_set(err, DK_INVALID,
                       "change data feed: the range from start %" PRId64 " to end %" PRId64
                       " is invalid: the end is before the start (DELTA_INVALID_CDC_RANGE)",
                       start, end);
    goto cleanup;
  }
  bool end_given = o.end_kind != DK_BOUND_DEFAULT;
  if (end > lv) end = lv;

  c = dk__calloc(dk_snapshot__allocator(latest), 1, sizeof *c);
  if (!c) {
    st = dk__error_set(err, DK_NOMEM, "out of memory (change data feed)");
    goto cleanup;
  }
  c->refs = 1;
  c->alloc = dk_snapshot__allocator(latest);
  dk_changes__files_init(&c->files, c->alloc);
  c->start = start;
  c->end = empty ? start - 1 : end;

  /* the read schema: the latest, or the end version's when column mapping is on at the
  ** start, the end or the latest version (delta-spark's batch CDF schema modes) */
  DK_CHECK_GOTO(open_at(&start_snap, t, start, err));
  dk_snapshot *end_snap = NULL;
  if (end_given && end < lv) DK_CHECK_GOTO(open_at(&end_snap, t, end, err));
  bool cm = dk_snapshot_column_mapping_mode(latest) != DK_COLUMN_MAPPING_NONE ||
            dk_snapshot_column_mapping_mode(start_snap) != DK_COLUMN_MAPPING_NONE ||
            (end_snap && dk_snapshot_column_mapping_mode(end_snap) != DK_COLUMN_MAPPING_NONE);
  c->read_snap = dk_snapshot_ref(cm && end_snap ? end_snap : latest);
  dk_snapshot_free(end_snap);

  dk_changes__meta start_meta, read_meta;
  DK_CHECK_GOTO(dk_changes__meta_of(&start_meta, dk_snapshot_metadata(start_snap), &ar, err));
  DK_CHECK_GOTO(dk_changes__meta_of(&read_meta, dk_snapshot_metadata(c->read_snap), &ar, err));
  DK_CHECK_GOTO(dk_changes__reader_new(&c->reader, c->read_snap, o.columns, o.n_columns,
                                       o.filter, true, o.batch_size, o.metadata_fields, err));
  if (!empty) {
    if (!start_meta.cdf) {
      st = dk__error_set(err, DK_UNSUPPORTED,
                         "change data feed: no change data is recorded for version %" PRId64
                         " (delta.enableChangeDataFeed is off there) in the range %" PRId64
                         "..%" PRId64 " (DELTA_MISSING_CHANGE_DATA)",
                         start, start, c->end);
      goto cleanup;
    }
    DK_CHECK_GOTO(plan_range(c, t, &read_meta, &start_meta, err));
  }
  st = DK_OK;
cleanup:
  dk__arena_dispose(&ar);
  dk_snapshot_free(latest);
  dk_snapshot_free(start_snap);
  if (st) {
    dk_changes_free(c);
    return st;
  }
  *out = c;
  return DK_OK;
}
