/*
** vacuum.c — VACUUM and RESTORE (PROTOCOL.md "VACUUM" / "Deletion Vectors"; delta-spark
** commands/VacuumCommand.scala and RestoreTableCommand.scala; write-path.md §2.6).
**
** VACUUM lists the table directory (through dk_storage), keeps every path the latest snapshot
** references — live files, tombstones deleted at or after the cutoff (now minus
** delta.deletedFileRetentionDuration), and the deletion-vector files of both — and deletes
** the rest that is older than the cutoff, each with the Hadoop checksum file Spark's local
** filesystem writes beside it (".<name>.crc"), then the directories left empty, deepest first
** (delta-spark's VacuumCommand deletes empty directories too; deleting the ones this run
** empties in the same run leaves nothing for Spark's next VACUUM to find). Names are hidden as
** DeltaTableUtils.isHiddenDirectory says: '_' or '.' first (so `_delta_log` is never listed),
** except `_change_data`, `_delta_index` and partition directories ("col=..."), and `metadata`
** on UniForm Iceberg tables; hidden files are never deleted. The retention may only be
** shortened below the table's with skip_retention_check (delta-spark's
** spark.databricks.delta.retentionDurationCheck).
**
** RESTORE is one transaction on the latest snapshot that reads the whole table, removes the
** files the target version lacks and re-adds the target's files the latest lacks, as they were
** (partition values, stats, DVs, row ids), with dataChange=true, plus the target's metadata.
*/
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dk/maintenance.h"
#include "dv/dv.h"
#include "txn/txn_int.h"

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "interval 7 days", "168 hours", "interval 1 week" (Spark CalendarInterval text) -> ms. */
dk_status dk_txn__parse_interval_ms(int64_t *out, const char *s, dk_error *err) {
  const char *p = s;
  while (*p == ' ') p++;
  if (!strncasecmp(p, "interval", 8)) p += 8;
  int64_t total = 0;
  int any = 0;
  for (;;) {
    while (*p == ' ') p++;
    if (!*p) break;
    char *end;
    double n = strtod(p, &end);
    if (end == p) goto bad;
    p = end;
    while (*p == ' ') p++;
    const char *u = p;
    while (*p && *p != ' ') p++;
    size_t ul = (size_t)(p - u);
    double mult;
#define UNIT(name) (ul >= strlen(name) - 1 && !strncasecmp(u, name, ul) && (ul == strlen(name) || ul == strlen(name) - 1))
    if (UNIT("weeks")) mult = 7 * 86400e3;
    else if (UNIT("days")) mult = 86400e3;
    else if (UNIT("hours")) mult = 3600e3;
    else if (UNIT("minutes")) mult = 60e3;
    else if (UNIT("seconds")) mult = 1e3;
    else if (UNIT("milliseconds")) mult = 1;
    else if (UNIT("microseconds")) mult = 1e-3;
    else goto bad;
#undef UNIT
    total += (int64_t)(n * mult);
    any = 1;
  }
  if (!any) goto bad;
  *out = total;
  return DK_OK;
bad:
  return dk__error_set(err, DK_INVALID, "cannot parse the interval '%s'", s);
}

static int64_t table_retention_ms(const dk_snapshot *s, dk_error *err, dk_status *st) {
  const char *v = dk_snapshot_property(s, "delta.deletedFileRetentionDuration");
  int64_t ms = 7LL * 86400000;
  *st = DK_OK;
  if (v) *st = dk_txn__parse_interval_ms(&ms, v, err);
  return ms;
}

/* A listed directory: its full path (offset into vac.dirs), its parent's index and how many
 * of its entries are still there (hidden ones included); 0 after the deletions = empty. */
typedef struct vac_dir {
  size_t path;
  int64_t parent;
  int64_t left;
} vac_dir;

typedef struct vac {
  dk_storage *sto;
  const char *root;
  size_t root_len;
  dk_hmap keep;
  dk_hmap crcs;         /* hidden ".<name>.crc" files listed (Hadoop checksums), by full path */
  const dk_metadata *md;
  int iceberg;          /* UniForm Iceberg: its `metadata` directory is hidden */
  int64_t cutoff;
  dk_buf dirs;          /* directory paths, NUL-terminated */
  vac_dir *dir;         /* listed directories, breadth first: a parent before its children */
  size_t n_dir, cap_dir;
  int64_t cur;          /* the directory being listed */
  dk_buf victims;       /* files to delete: dir index NUL path NUL size NUL ... */
  dk_error *err;
} vac;

static dk_status keep_path(vac *v, const char *rel, dk_error *err) {
  uint64_t *slot;
  bool ins;
  return dk__hmap_upsert(&v->keep, rel, strlen(rel), &slot, &ins, err);
}

static dk_status keep_dv(vac *v, const dk_dv_descriptor *dv, dk_error *err) {
  if (!dv || dv->storage_type == 'i') return DK_OK;
  dk_dv_desc d;
  const char st[2] = {dv->storage_type, 0};
  int64_t off = dv->offset;
  DK_RETURN_NOT_OK(dk_dv__descriptor_init(&d, (dk_str){st, 1},
                                          (dk_str){dv->path_or_inline_dv,
                                                   strlen(dv->path_or_inline_dv)},
                                          dv->offset >= 0 ? &off : NULL, dv->size_in_bytes,
                                          dv->cardinality, err));
  dk_buf b;
  dk__buf_init(&b, NULL);
  dk_status s = dk_dv__resolve_path(v->root, &d, &b, err);
  if (!s && b.len > v->root_len + 1 && !strncmp(b.data, v->root, v->root_len) &&
      b.data[v->root_len] == '/')
    s = keep_path(v, b.data + v->root_len + 1, err);
  dk__buf_dispose(&b);
  return s;
}

/* delta-spark DeltaTableUtils.isHiddenDirectory, applied to every listed name */
static int hidden(const vac *v, const char *name) {
  if (v->iceberg && !strcmp(name, "metadata")) return 1;
  if (name[0] != '_' && name[0] != '.') return 0;
  if (!strncmp(name, "_change_data", 12) || !strncmp(name, "_delta_index", 12)) return 0;
  for (size_t i = 0; i < v->md->n_partition_columns; i++) {
    size_t n = strlen(v->md->partition_columns[i]);
    if (!strncmp(name, v->md->partition_columns[i], n) && name[n] == '=') return 0;
  }
  return 1;
}

static dk_status add_dir(vac *v, const char *path, int64_t parent) {
  if (v->n_dir == v->cap_dir) {
    size_t cap = v->cap_dir ? 2 * v->cap_dir : 16;
    vac_dir *d = dk__realloc(NULL, v->dir, cap * sizeof *d);
    if (!d) return dk__error_set(v->err, DK_NOMEM, "out of memory (vacuum)");
    v->dir = d;
    v->cap_dir = cap;
  }
  v->dir[v->n_dir++] = (vac_dir){.path = v->dirs.len, .parent = parent};
  return dk__buf_append(&v->dirs, path, strlen(path) + 1, v->err);
}

static dk_status list_cb(const dk_file_info *fi, void *payload) {
  vac *v = payload;
  const char *name = strrchr(fi->path, '/');
  name = name ? name + 1 : fi->path;
  if (strlen(fi->path) <= v->root_len + 1) return DK_OK;
  v->dir[v->cur].left++;
  if (hidden(v, name)) {
    size_t n = strlen(name);
    uint64_t *slot;
    bool ins;
    if (!fi->is_dir && name[0] == '.' && n > 5 && !strcmp(name + n - 4, ".crc"))
      return dk__hmap_upsert(&v->crcs, fi->path, strlen(fi->path), &slot, &ins, v->err);
    return DK_OK;
  }
  const char *rel = fi->path + v->root_len + 1;
  if (fi->is_dir) return add_dir(v, fi->path, v->cur);
  if (dk__hmap_get(&v->keep, rel, strlen(rel))) return DK_OK;
  if (fi->mtime_ms >= v->cutoff) return DK_OK;
  return dk__buf_printf(&v->victims, v->err, "%lld%c%s%c%lld%c", (long long)v->cur, 0, fi->path,
                        0, (long long)fi->size, 0);
}

/* Removes path unless dry; one already gone (another VACUUM) counts as removed. */
static dk_status vac_remove(vac *v, const char *path, int dry) {
  if (dry) return DK_OK;
  dk_status st = v->sto->remove(v->sto, path, v->err);
  if (st == DK_NOT_FOUND) {
    if (v->err) dk_error_init(v->err);
    st = DK_OK;
  }
  return st;
}

/* Deletes the victims, each with its Hadoop checksum file, then the directories left empty,
 * deepest first (delta-spark deletes empty directories too; its next run would list the ones
 * this run empties, so dk removes them in the same run). */
static dk_status vac_delete(vac *v, const dk_vacuum_options *o, dk_vacuum_result *out) {
  dk_status st = DK_OK;
  dk_buf crc;
  dk__buf_init(&crc, NULL);
  for (size_t p = 0; !st && p < v->victims.len;) {
    int64_t d = strtoll(v->victims.data + p, NULL, 10);
    p += strlen(v->victims.data + p) + 1;
    const char *path = v->victims.data + p;
    p += strlen(path) + 1;
    int64_t size = strtoll(v->victims.data + p, NULL, 10);
    p += strlen(v->victims.data + p) + 1;
    st = vac_remove(v, path, o->dry_run);
    if (st) break;
    v->dir[d].left--;
    if (out) {
      out->files++;
      out->bytes += size;
    }
    if (o->on_file) st = o->on_file(o->payload, path + v->root_len + 1, size);
    const char *base = strrchr(path, '/') + 1;
    dk__buf_clear(&crc);
    if (!st) st = dk__buf_printf(&crc, v->err, "%.*s.%s.crc", (int)(base - path), path, base);
    if (!st && dk__hmap_get(&v->crcs, crc.data, crc.len)) {
      st = vac_remove(v, crc.data, o->dry_run);
      v->dir[d].left--;
    }
  }
  dk__buf_dispose(&crc);
  for (size_t i = v->n_dir; !st && i-- > 1;) { /* never the root */
    if (v->dir[i].left) continue;
    /* best effort, like delta-spark's tryDeleteNonRecursive: a file written there meanwhile
     * keeps the directory */
    if (vac_remove(v, v->dirs.data + v->dir[i].path, o->dry_run)) {
      if (v->err) dk_error_init(v->err);
      continue;
    }
    v->dir[v->dir[i].parent].left--;
    if (out && out->version >= 2) out->dirs++;
  }
  return st;
}

dk_status dk_table_vacuum(dk_vacuum_result *out, dk_table *t, const dk_vacuum_options *opts,
                          dk_error *err) {
  if (out) {
    unsigned ver = out->version;
    memset(out, 0, ver >= 2 ? sizeof *out : offsetof(dk_vacuum_result, dirs));
    out->version = ver;
  }
  DK_RETURN_IF(!t, DK_INVALID, err, "dk_table_vacuum: NULL table");
  DK_RETURN_IF(opts && opts->version > DK_VACUUM_OPTIONS_VERSION, DK_UNSUPPORTED, err,
               "dk_vacuum_options version %u is newer than dk's", opts->version);
  DK_RETURN_IF(out && out->version > DK_VACUUM_RESULT_VERSION, DK_UNSUPPORTED, err,
               "dk_vacuum_result version %u is newer than dk's", out->version);
  dk_vacuum_options o = {.version = DK_VACUUM_OPTIONS_VERSION, .retention_hours = -1};
  if (opts) o = *opts;
  dk_snapshot *s;
  DK_RETURN_NOT_OK(dk_snapshot_open(&s, t, NULL, err));
  dk_status st = dk_txn__check_write_protocol(dk_snapshot_protocol(s), err);
  if (st) {
    dk__error_prefix(err, "VACUUM %s", t->root);
    dk_snapshot_free(s);
    return st;
  }
  int64_t table_ms = table_retention_ms(s, err, &st);
  if (st) {
    dk_snapshot_free(s);
    return st;
  }
  int64_t ret_ms = (o.use_table_retention || o.retention_hours < 0)
                       ? table_ms
                       : (int64_t)(o.retention_hours * 3600e3);
  if (ret_ms < table_ms && !o.skip_retention_check) {
    dk_snapshot_free(s);
    return dk__error_set(err, DK_INVALID,
                         "VACUUM %s: a retention of %.1f hours is shorter than the table's "
                         "delta.deletedFileRetentionDuration (%.1f hours); files that concurrent "
                         "readers or writers still use could be deleted. Disable the retention "
                         "check to do it anyway (DELTA_VACUUM_RETENTION_TOO_SHORT)",
                         t->root, (double)ret_ms / 3600e3, (double)table_ms / 3600e3);
  }
  const char *uf = dk_snapshot_property(s, "delta.universalFormat.enabledFormats");
  vac v = {.sto = t->sto, .root = t->root, .root_len = strlen(t->root),
           .md = dk_snapshot_metadata(s), .iceberg = uf && strstr(uf, "iceberg"), .err = err};
  int64_t now = o.now_ms > 0 ? o.now_ms : wall_ms();
  v.cutoff = now - ret_ms;
  dk__hmap_init(&v.keep, t->alloc);
  dk__hmap_init(&v.crcs, t->alloc);
  dk__buf_init(&v.dirs, t->alloc);
  dk__buf_init(&v.victims, t->alloc);
  for (int64_t i = 0; i < dk_snapshot_num_files(s) && !st; i++) {
    dk_file_entry f;
    st = dk_snapshot_file(&f, s, i, err);
    if (!st && f.path[0] != '/' && !strstr(f.path, "://")) st = keep_path(&v, f.path, err);
    if (!st) st = keep_dv(&v, f.dv, err);
  }
  /* tombstones deleted at or after the cutoff stay (VacuumCommand drops delTimestamp <
   * deleteBeforeTimestamp); one without a deletion time is kept too */
  for (size_t i = 0; i < s->tombs.n && !st; i++) {
    const dk__tomb *tb = dk_snapshot__tomb_at(s, (int64_t)i);
    if (tb->deletion_timestamp >= 0 && tb->deletion_timestamp < v.cutoff) continue;
    if (tb->path[0] != '/' && !strstr(tb->path, "://")) st = keep_path(&v, tb->path, err);
    if (!st) st = keep_dv(&v, tb->dv, err);
  }
  /* breadth-first listing of the root and every non-hidden directory below it */
  if (!st) st = add_dir(&v, t->root, -1);
  for (v.cur = 0; !st && (size_t)v.cur < v.n_dir; v.cur++) {
    char *dir = dk__strdup(t->alloc, v.dirs.data + v.dir[v.cur].path);
    if (!dir) {
      st = dk__error_set(err, DK_NOMEM, "out of memory (vacuum)");
      break;
    }
    st = t->sto->list_from(t->sto, dir, NULL, list_cb, &v, err);
    if (st == DK_NOT_FOUND) {
      dk_error_init(err ? err : &(dk_error){0});
      st = DK_OK;
    }
    dk__free(t->alloc, dir);
  }
  if (!st) st = vac_delete(&v, &o, out);
  if (out) out->cutoff_ms = v.cutoff;
  dk__free(NULL, v.dir);
  dk__buf_dispose(&v.dirs);
  dk__buf_dispose(&v.victims);
  dk__hmap_dispose(&v.keep);
  dk__hmap_dispose(&v.crcs);
  dk_snapshot_free(s);
  return st;
}

/* ---- RESTORE ------------------------------------------------------------------------------ */

dk_status dk_table_restore(dk_commit_result *out, dk_table *t, int64_t version,
                           const dk_txn_options *opts, dk_error *err) {
  DK_RETURN_IF(!t, DK_INVALID, err, "dk_table_restore: NULL table");
  dk_snapshot *latest = NULL, *old = NULL;
  DK_RETURN_NOT_OK(dk_snapshot_open(&latest, t, NULL, err));
  dk_status st = DK_OK;
  dk_txn *x = NULL;
  dk_hmap in_latest, in_old;
  dk__hmap_init(&in_latest, t->alloc);
  dk__hmap_init(&in_old, t->alloc);
  dk_buf key;
  dk__buf_init(&key, t->alloc);
  dk_file_iter *it = NULL; /* the re-added files keep their stats */
  if (version < 0 || version > dk_snapshot_version(latest)) {
    st = dk__error_set(err, DK_OUT_OF_RANGE,
                       "RESTORE %s: version %lld is not in the table's history (latest %lld)",
                       t->root, (long long)version, (long long)dk_snapshot_version(latest));
    goto cleanup;
  }
  dk_snapshot_options so = {.version = DK_SNAPSHOT_OPTIONS_VERSION, .at_version = version};
  DK_CHECK_GOTO(dk_snapshot_open(&old, t, &so, err));
  char params[128];
  snprintf(params, sizeof params, "{\"version\":\"%lld\",\"timestamp\":null}", (long long)version);
  dk_txn_options o = {.version = DK_TXN_OPTIONS_VERSION};
  if (opts) o = *opts;
  o.operation = "RESTORE";
  o.operation_parameters = params;
  DK_CHECK_GOTO(dk_txn_begin(&x, latest, &o, err));
  dk_txn_read_whole_table(x);
  int64_t nl = dk_snapshot_num_files(latest), no = dk_snapshot_num_files(old);
  for (int64_t i = 0; i < no; i++) {
    dk_file_entry f;
    uint64_t *slot;
    bool ins;
    DK_CHECK_GOTO(dk_snapshot_file(&f, old, i, err));
    DK_CHECK_GOTO(dk_txn__file_key(&key, &f, err));
    DK_CHECK_GOTO(dk__hmap_upsert(&in_old, key.data, key.len, &slot, &ins, err));
  }
  int64_t removed = 0, removed_bytes = 0, restored = 0, restored_bytes = 0, after_bytes = 0;
  for (int64_t i = 0; i < nl; i++) {
    dk_file_entry f;
    uint64_t *slot;
    bool ins;
    DK_CHECK_GOTO(dk_snapshot_file(&f, latest, i, err));
    DK_CHECK_GOTO(dk_txn__file_key(&key, &f, err));
    DK_CHECK_GOTO(dk__hmap_upsert(&in_latest, key.data, key.len, &slot, &ins, err));
    if (!dk__hmap_get(&in_old, key.data, key.len)) {
      DK_CHECK_GOTO(dk_txn_remove_file(x, i, 1, err));
      removed++;
      removed_bytes += f.size;
    }
  }
  DK_CHECK_GOTO(dk_snapshot_files_open(&it, old, NULL, err));
  for (int64_t i = 0; i < no; i++) {
    const dk_file_entry *fe;
    DK_CHECK_GOTO(dk_file_iter_next(&fe, it, err));
    dk_file_entry f = *fe; /* stats valid until the next call on it */
    after_bytes += f.size;
    DK_CHECK_GOTO(dk_txn__file_key(&key, &f, err));
    if (dk__hmap_get(&in_latest, key.data, key.len)) continue;
    /* the file must still exist (not vacuumed) */
    size_t fl = dk_snapshot_file_path(NULL, 0, old, &f);
    char *full = dk__malloc(t->alloc, fl + 1);
    if (!full) DK_CHECK_GOTO(dk__error_set(err, DK_NOMEM, "out of memory (RESTORE)"));
    dk_snapshot_file_path(full, fl + 1, old, &f);
    dk_file_info fi;
    st = t->sto->stat(t->sto, full, &fi, err);
    dk__free(t->alloc, full);
    if (st == DK_NOT_FOUND) {
      dk__error_prefix(err, "RESTORE %s to version %lld: data file '%s' of that version no "
                            "longer exists (vacuumed?)",
                       t->root, (long long)version, f.path);
      goto cleanup;
    }
    if (st) goto cleanup;
    DK_CHECK_GOTO(dk_txn__add_entry(x, &f, 1, err));
    restored++;
    restored_bytes += f.size;
  }
  /* the old version's metadata, when it differs */
  const dk_metadata *om = dk_snapshot_metadata(old), *lm = dk_snapshot_metadata(latest);
  int same = om->schema_string && lm->schema_string && !strcmp(om->schema_string, lm->schema_string) &&
             om->n_configuration == lm->n_configuration;
  for (size_t i = 0; same && i < om->n_configuration; i++)
    same = !strcmp(om->config_keys[i], lm->config_keys[i]) &&
           !strcmp(om->config_values[i], lm->config_values[i]);
  if (!same) {
    const char **conf = dk__calloc(t->alloc, 2 * om->n_configuration + 1, sizeof *conf);
    if (!conf) {
      st = dk__error_set(err, DK_NOMEM, "out of memory (restore)");
      goto cleanup;
    }
    for (size_t i = 0; i < om->n_configuration; i++) {
      conf[2 * i] = om->config_keys[i];
      conf[2 * i + 1] = om->config_values[i];
    }
    dk_metadata_spec m = {.version = DK_METADATA_SPEC_VERSION, .id = lm->id, .name = om->name,
                          .description = om->description, .schema_string = om->schema_string,
                          .n_partition_columns = om->n_partition_columns,
                          .partition_columns = om->partition_columns,
                          .n_configuration = om->n_configuration, .configuration = conf,
                          .created_time = lm->created_time};
    st = dk_txn_set_metadata(x, &m, err);
    dk__free(t->alloc, conf);
    if (st) goto cleanup;
  }
  DK_CHECK_GOTO(dk_txn_set_metric(x, "tableSizeAfterRestore", after_bytes, err));
  DK_CHECK_GOTO(dk_txn_set_metric(x, "numOfFilesAfterRestore", no, err));
  DK_CHECK_GOTO(dk_txn_set_metric(x, "numRemovedFiles", removed, err));
  DK_CHECK_GOTO(dk_txn_set_metric(x, "numRestoredFiles", restored, err));
  DK_CHECK_GOTO(dk_txn_set_metric(x, "removedFilesSize", removed_bytes, err));
  DK_CHECK_GOTO(dk_txn_set_metric(x, "restoredFilesSize", restored_bytes, err));
  st = dk_txn_commit(x, out, err);
  x = NULL;
cleanup:
  dk_file_iter_free(it);
  dk_txn_abort(x);
  dk__buf_dispose(&key);
  dk__hmap_dispose(&in_latest);
  dk__hmap_dispose(&in_old);
  dk_snapshot_free(old);
  dk_snapshot_free(latest);
  return st;
}
