/*
** checkpoint.c — writing checkpoints and cleaning up the log (PROTOCOL.md "Checkpoints",
** "V2 Spec", "Last Checkpoint File", "Metadata Cleanup"; write-path.md §2; delta-spark
** Checkpoints.scala, MetadataCleanup.scala).
**
** A checkpoint is the reconciled state of one version: protocol, metadata, every app
** transaction, live domain metadata, every live file (dataChange=false) and the tombstones
** still inside delta.deletedFileRetentionDuration (without stats and tags). Tables with
** delta.checkpointPolicy=v2 get a V2 checkpoint whose top-level file is JSON
** (`<v>.checkpoint.<uuid>.json`, delta-spark's default format) with one checkpointMetadata
** action and the file actions inline. Classic Parquet checkpoints (and V2 sidecars) need the
** Parquet writer, which this build does not have yet: they are DK_UNSUPPORTED.
**
** The checkpoint file is published with put-if-absent under a new name (or the classic name),
** so a crash leaves no partial checkpoint; `_last_checkpoint` is written (atomically replaced)
** after it, and is only ever a hint.
**
** Cleanup keeps the newest checkpoint at or before the last commit older than the cutoff
** (now - delta.logRetentionDuration, truncated to UTC midnight) and everything after it; older
** commits, checkpoints, .crc and compaction files are deleted.
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dk/maintenance.h"
#include "log/paths.h"
#include "txn/txn_int.h"

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One add of the checkpoint, from a file entry with its stats. */
static dk_status put_add(dk_buf *b, const dk_file_entry *f, dk_error *err) {
  DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"add\":{\"path\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_path(b, f->path, err));
  DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"partitionValues\":", err));
  DK_RETURN_NOT_OK(dk_txn__put_kv_map(b, f->partition_kv, f->n_partition_values, err));
  DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"size\":%lld,\"modificationTime\":%lld,"
                                  "\"dataChange\":false",
                                  (long long)f->size, (long long)f->modification_time));
  if (f->stats) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"stats\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, f->stats, err));
  }
  if (f->tags_json) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"tags\":", err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, f->tags_json, err));
  }
  if (f->dv) {
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"deletionVector\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_dv(b, f->dv, err));
  }
  if (f->has_base_row_id)
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"baseRowId\":%lld", (long long)f->base_row_id));
  if (f->has_default_row_commit_version)
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"defaultRowCommitVersion\":%lld",
                                    (long long)f->default_row_commit_version));
  DK_RETURN_NOT_OK(dk__buf_puts(b, "}}\n", err));
  return DK_OK;
}

static dk_status put_file_actions(dk_buf *b, dk_snapshot *s, int64_t min_tomb_ts, int64_t *n_actions,
                                  int64_t *n_adds, dk_error *err) {
  dk_file_iter *it; /* the stats come through an iterator (dk_snapshot_file has none) */
  DK_RETURN_NOT_OK(dk_snapshot_files_open(&it, s, NULL, err));
  dk_status st = DK_OK;
  for (;;) {
    const dk_file_entry *f;
    st = dk_file_iter_next(&f, it, err);
    if (st != DK_OK || !f) break;
    st = put_add(b, f, err);
    if (st != DK_OK) break;
    (*n_actions)++;
    (*n_adds)++;
  }
  dk_file_iter_free(it);
  DK_RETURN_NOT_OK(st);
  for (size_t i = 0; i < s->st.n_tombs; i++) {
    const dk__tomb *tb = &s->st.tombs[i];
    if (tb->deletion_timestamp >= 0 && tb->deletion_timestamp <= min_tomb_ts) continue;
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"remove\":{\"path\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_path(b, tb->path, err));
    if (tb->deletion_timestamp >= 0)
      DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"deletionTimestamp\":%lld",
                                      (long long)tb->deletion_timestamp));
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"dataChange\":false", err));
    if (tb->size >= 0)
      DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"extendedFileMetadata\":true,\"size\":%lld",
                                      (long long)tb->size));
    if (tb->dv) {
      DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"deletionVector\":", err));
      DK_RETURN_NOT_OK(dk_txn__put_dv(b, tb->dv, err));
    }
    DK_RETURN_NOT_OK(dk__buf_puts(b, "}}\n", err));
    (*n_actions)++;
  }
  return DK_OK;
}

static dk_status put_non_file_actions(dk_buf *b, dk_snapshot *s, dk_arena *ar, int64_t *n,
                                      dk_error *err) {
  DK_RETURN_NOT_OK(dk_txn__put_protocol(b, dk_snapshot_protocol(s), err));
  txn_meta m;
  DK_RETURN_NOT_OK(dk_txn__meta_from_snapshot(&m, ar, dk_snapshot_metadata(s), err));
  DK_RETURN_NOT_OK(dk_txn__put_metadata(b, &m, NULL, 0, err));
  *n += 2;
  for (size_t i = 0; i < dk_snapshot_num_txns(s); i++) {
    const char *app;
    int64_t v, lu;
    dk_snapshot_txn(&app, &v, &lu, s, i);
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"txn\":{\"appId\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, app, err));
    DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"version\":%lld", (long long)v));
    if (lu >= 0) DK_RETURN_NOT_OK(dk__buf_printf(b, err, ",\"lastUpdated\":%lld", (long long)lu));
    DK_RETURN_NOT_OK(dk__buf_puts(b, "}}\n", err));
    (*n)++;
  }
  for (size_t i = 0; i < s->st.n_domains; i++) {
    const dk__domain *d = &s->st.domains[i];
    if (d->removed) continue;
    DK_RETURN_NOT_OK(dk__buf_puts(b, "{\"domainMetadata\":{\"domain\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, d->domain, err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"configuration\":", err));
    DK_RETURN_NOT_OK(dk_txn__put_str(b, d->config ? d->config : "", err));
    DK_RETURN_NOT_OK(dk__buf_puts(b, ",\"removed\":false}}\n", err));
    (*n)++;
  }
  return DK_OK;
}

dk_status dk_table_checkpoint(dk_checkpoint_result *out, dk_table *t,
                              const dk_checkpoint_options *opts, dk_error *err) {
  if (out) {
    unsigned v = out->version;
    memset(out, 0, sizeof *out);
    out->version = v;
  }
  DK_RETURN_IF(!t, DK_INVALID, err, "dk_table_checkpoint: NULL table");
  DK_RETURN_IF(opts && opts->version > DK_CHECKPOINT_OPTIONS_VERSION, DK_UNSUPPORTED, err,
               "dk_checkpoint_options version %u is newer than dk's", opts->version);
  dk_snapshot_options so = {.version = DK_SNAPSHOT_OPTIONS_VERSION,
                            .at_version = opts && opts->at_version >= 0 ? opts->at_version : -1};
  dk_snapshot *s;
  DK_RETURN_NOT_OK(dk_snapshot_open(&s, t, &so, err));
  dk_status st = dk_txn__check_write_protocol(dk_snapshot_protocol(s), err);
  const char *policy = dk_snapshot_property(s, "delta.checkpointPolicy");
  int v2_ok = dk_snapshot_has_feature(s, "v2Checkpoint");
  dk_checkpoint_kind kind = opts && opts->kind ? opts->kind
                            : (v2_ok && policy && !strcmp(policy, "v2")) ? DK_CHECKPOINT_V2_JSON
                                                                         : DK_CHECKPOINT_CLASSIC;
  if (!st && kind != DK_CHECKPOINT_V2_JSON)
    st = dk__error_set(err, DK_UNSUPPORTED,
                       "%s: %s checkpoints need dk's Parquet writer, which this build lacks "
                       "(V2 JSON checkpoints of v2Checkpoint tables are written)",
                       t->root, kind == DK_CHECKPOINT_CLASSIC ? "classic Parquet" : "V2 Parquet");
  if (!st && kind == DK_CHECKPOINT_V2_JSON && !v2_ok)
    st = dk__error_set(err, DK_INVALID,
                       "%s: a V2 checkpoint needs the v2Checkpoint table feature", t->root);
  if (st) {
    dk_snapshot_free(s);
    return st;
  }
  int64_t v = dk_snapshot_version(s);
  int64_t now = opts && opts->now_ms > 0 ? opts->now_ms : wall_ms();
  int64_t retention = 7LL * 86400000;
  const char *rv = dk_snapshot_property(s, "delta.deletedFileRetentionDuration");
  if (rv && dk_txn__parse_interval_ms(&retention, rv, err) != DK_OK) {
    dk_snapshot_free(s);
    return err ? err->code : DK_INVALID;
  }
  dk_buf b, last, name, key;
  dk__buf_init(&b, t->alloc);
  dk__buf_init(&last, t->alloc);
  dk__buf_init(&name, t->alloc);
  dk__buf_init(&key, t->alloc);
  dk_arena ar;
  dk__arena_init(&ar, t->alloc, 4096);
  int64_t n_actions = 0, n_adds = 0;
  DK_CHECK_GOTO(put_non_file_actions(&b, s, &ar, &n_actions, err));
  DK_CHECK_GOTO(dk__buf_printf(&b, err, "{\"checkpointMetadata\":{\"version\":%lld}}\n",
                               (long long)v));
  n_actions++;
  DK_CHECK_GOTO(put_file_actions(&b, s, now - retention, &n_actions, &n_adds, err));
  char uuid[37];
  dk_txn__uuid(uuid);
  DK_CHECK_GOTO(dk_log__name_checkpoint_v2(&name, v, uuid, false, err));
  DK_CHECK_GOTO(dk_log__file_key(&key, t->root, name.data, err));
  DK_CHECK_GOTO(t->sto->put_if_absent(t->sto, key.data, b.data, b.len, err));
  /* _last_checkpoint, last */
  DK_CHECK_GOTO(dk__buf_printf(&last, err,
                               "{\"version\":%lld,\"size\":%lld,\"sizeInBytes\":%lld,"
                               "\"numOfAddFiles\":%lld}",
                               (long long)v, (long long)n_actions, (long long)b.len,
                               (long long)n_adds));
  DK_CHECK_GOTO(dk_log__file_key(&key, t->root, DK_LOG__LAST_CHECKPOINT, err));
  DK_CHECK_GOTO(t->sto->write(t->sto, key.data, last.data, last.len, err));
  if (out) {
    out->checkpoint_version = v;
    out->kind = kind;
    snprintf(out->file_name, sizeof out->file_name, "%s", name.data);
    out->num_actions = n_actions;
    out->num_add_files = n_adds;
    out->size_in_bytes = (int64_t)b.len;
  }
cleanup:
  dk__arena_dispose(&ar);
  dk__buf_dispose(&b);
  dk__buf_dispose(&last);
  dk__buf_dispose(&name);
  dk__buf_dispose(&key);
  dk_snapshot_free(s);
  return st;
}

/* ---- metadata cleanup --------------------------------------------------------------------- */

dk_status dk_table_cleanup_metadata(int64_t *deleted, dk_table *t, const dk_cleanup_options *opts,
                                    dk_error *err) {
  if (deleted) *deleted = 0;
  DK_RETURN_IF(!t, DK_INVALID, err, "dk_table_cleanup_metadata: NULL table");
  dk_snapshot *s;
  DK_RETURN_NOT_OK(dk_snapshot_open(&s, t, NULL, err));
  dk_status st = dk_txn__check_write_protocol(dk_snapshot_protocol(s), err);
  int64_t retention = 30LL * 86400000;
  const char *rv = dk_snapshot_property(s, "delta.logRetentionDuration");
  if (!st && opts && opts->retention_ms > 0) retention = opts->retention_ms;
  else if (!st && rv) st = dk_txn__parse_interval_ms(&retention, rv, err);
  int enabled = !dk_snapshot_property(s, "delta.enableExpiredLogCleanup") ||
                strcmp(dk_snapshot_property(s, "delta.enableExpiredLogCleanup"), "false");
  dk_snapshot_free(s);
  if (st || !enabled) return st;
  int64_t now = opts && opts->now_ms > 0 ? opts->now_ms : wall_ms();
  int64_t cutoff = now - retention;
  cutoff -= ((cutoff % 86400000) + 86400000) % 86400000; /* truncated to UTC midnight */
  dk__segment seg;
  memset(&seg, 0, sizeof seg);
  DK_RETURN_NOT_OK(dk_log__list_all(&seg, t->sto, t->root, t->alloc, err));
  /* the last commit older than the cutoff, then the newest complete checkpoint at or before it */
  int64_t last_old = -1, keep = -1;
  for (size_t i = 0; i < seg.n_all; i++)
    if (seg.all[i].kind == DK__LF_COMMIT && seg.all[i].mtime <= cutoff &&
        seg.all[i].version > last_old)
      last_old = seg.all[i].version;
  for (size_t i = 0; i < seg.n_all; i++) {
    const dk__logfile *f = &seg.all[i];
    int cp = f->kind == DK__LF_CP_CLASSIC || f->kind == DK__LF_CP_V2_JSON ||
             f->kind == DK__LF_CP_V2_PARQUET;
    if (cp && f->version <= last_old && f->version > keep) keep = f->version;
  }
  int64_t n = 0;
  dk_buf key;
  dk__buf_init(&key, t->alloc);
  if (keep > 0) {
    for (size_t i = 0; i < seg.n_all && !st; i++) {
      const dk__logfile *f = &seg.all[i];
      int old = f->kind == DK__LF_COMPACTION ? f->version_hi < keep : f->version < keep;
      if (!old || f->mtime > cutoff) continue;
      n++;
      if (opts && opts->dry_run) continue;
      st = dk_log__file_key(&key, t->root, f->name, err);
      if (!st) st = t->sto->remove(t->sto, key.data, err);
      if (st == DK_NOT_FOUND) {
        if (err) dk_error_init(err);
        st = DK_OK;
      }
    }
  }
  dk__buf_dispose(&key);
  dk_log__segment_dispose(&seg);
  if (deleted) *deleted = n;
  return st;
}
