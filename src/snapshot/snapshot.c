/*
** snapshot.c — tables and immutable snapshots: loading a version (log segment + replay),
** time travel by version and timestamp, incremental refresh, and the snapshot accessors.
**
** Follows PROTOCOL.md "Action Reconciliation" (via src/log/actions.c), "Checkpoints" and
** "V2 Checkpoint" (checkpoint first, then sidecars, then commits), "Protocol Evolution" /
** "Table Features" (reader check before anything else is trusted), "Column Mapping" and
** "In-Commit Timestamps" (a version's commit time is commitInfo.inCommitTimestamp from the
** enablement version on, the commit file's modification time before).
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "log/paths.h"
#include "protocol/protocol.h"
#include "protocol/schema.h"
#include "protocol/table_config.h"
#include "snapshot/access.h"
#include "snapshot/snapshot_int.h"
#include "storage/local.h"

/* ---- table ------------------------------------------------------------------------------ */

dk_status dk_table_open(dk_table **out, const char *uri, const dk_table_options *opts,
                        dk_error *err) {
  *out = NULL;
  if (!uri || !*uri) return dk__error_set(err, DK_INVALID, "dk_table_open: empty table URI");
  DK_CHECK_OPTIONS_VERSION(opts, DK_TABLE_OPTIONS_VERSION, "dk_table_open", err);
  const dk_allocator *alloc = opts ? opts->alloc : NULL;
  dk_storage *given = opts ? opts->storage : NULL;
  if (given) DK_RETURN_NOT_OK(dk_io__storage_check(given, "dk_table_open", err));
  char *root = NULL;
  size_t scheme_len = 0;
  dk_status st = dk_io__root_canonical(&root, &scheme_len, uri, alloc, err);
  if (st) {
    dk__error_prefix(err, "dk_table_open");
    return st;
  }
  if (scheme_len && !given) {
    st = dk__error_set(err, DK_UNSUPPORTED,
                       "dk_table_open: '%s': no storage backend for scheme '%.*s' (local paths "
                       "are built in; pass a backend in dk_table_options.storage)",
                       uri, (int)scheme_len, root);
    dk__free(alloc, root);
    return st;
  }
  if (!given) {
    /* the local root is made absolute, so that absolute paths in the log can be recognised
     * as lying under it and nothing depends on the working directory later */
    char *real = dk_storage__local_realpath(root, alloc);
    if (real) {
      dk__free(alloc, root);
      root = real;
    } else if (opts && opts->version >= 2 && opts->confine_paths) {
      /* a confined backend needs the absolute root; one that cannot be resolved is missing */
      st = dk__error_set(err, DK_NOT_FOUND, "table root %s does not exist", uri);
      dk__free(alloc, root);
      return st;
    }
  }
  dk_table *t = dk__calloc(alloc, 1, sizeof *t);
  if (!t) {
    dk__free(alloc, root);
    return dk__error_set(err, DK_NOMEM, "out of memory");
  }
  t->alloc = alloc;
  t->refs = 1;
  t->root = root;
  t->confine = opts && opts->version >= 2 && opts->confine_paths;
  if (given) {
    t->sto = given;
  } else {
    st = t->confine ? dk_storage__local_new_confined(&t->sto, root, alloc, err)
                    : dk_storage_local_new(&t->sto, alloc, err);
    if (st != DK_OK) {
      dk__free(alloc, t->root);
      dk__free(alloc, t);
      return st;
    }
    t->own_sto = 1;
  }
  st = dk__exec_new(&t->exec, opts ? opts->threads : 0, alloc, err);
  if (st != DK_OK) {
    dk_table_free(t);
    return st;
  }
  if (!scheme_len) { /* a local root must exist; an object store has no directories to ask */
    dk_file_info fi;
    dk_error e2 = {0};
    st = t->sto->stat(t->sto, t->root, &fi, &e2);
    if (st == DK_NOT_FOUND) {
      dk_table_free(t);
      return dk__error_set(err, DK_NOT_FOUND, "table root %s does not exist", uri);
    }
  }
  *out = t;
  return DK_OK;
}

static void table_unref(dk_table *t) {
  if (!t) return;
  if (__atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  dk__exec_free(t->exec);
  if (t->own_sto && t->sto) t->sto->free(t->sto);
  dk__free(t->alloc, t->root);
  dk__free(t->alloc, t);
}

void dk_table_free(dk_table *t) { table_unref(t); }

const char *dk_table_root(const dk_table *t) { return t->root; }

/* ---- snapshot construction -------------------------------------------------------------- */

/* Validates the replayed state and fills the derived fields of s; moves the state's files and
 * tombstones into s's lists: as they are (a full load, old NULL), or applied to old's (a
 * refresh: the state then holds the new commits alone). */
static dk_status finish_snapshot(dk_snapshot *s, const dk__segment *seg, const dk_snapshot *old,
                                 dk_error *err) {
  dk__log lg = dk_snapshot__log(s->table);
  dk__state *st = &s->st;
  const char *root = s->table->root;
  if (!st->has_protocol)
    return dk__error_set(err, DK_CORRUPT,
                         "%s: no protocol action found while replaying the log up to version %" PRId64,
                         root, s->version);
  dk_status pr = dk_protocol__check_read(&st->protocol, err);
  if (pr != DK_OK) {
    dk__error_prefix(err, "%s at version %" PRId64, root, s->version);
    return pr;
  }
  if (!st->has_metadata)
    return dk__error_set(err, DK_CORRUPT,
                         "%s: no metaData action found while replaying the log up to version %" PRId64,
                         root, s->version);
  /* a metaData without schemaString (seen in old log-only tables) gives an empty schema */
  static const char empty_schema[] = "{\"type\":\"struct\",\"fields\":[]}";
  const char *schema_text = st->metadata.schema_string ? st->metadata.schema_string : empty_schema;
  dk_status r = dk_schema__parse(&s->schema, &st->arena, schema_text, strlen(schema_text), err);
  if (r != DK_OK) {
    dk__error_prefix(err, "%s: schemaString", root);
    return r;
  }
  DK_RETURN_NOT_OK(dk_protocol__config_read(&s->config, &st->metadata, false, err));
  s->cm_mode = s->config.column_mapping_mode;
  DK_RETURN_NOT_OK(dk_log__state_finish(st, err));
  if (!s->from_crc) {
    const dk_allocator *a = s->table->alloc;
    if (old) {
      DK_RETURN_NOT_OK(dk_snapshot__lists_refresh(&s->files, &s->tombs, &s->total_bytes,
                                                  &old->files, &old->tombs, old->total_bytes,
                                                  st, a, err));
    } else {
      void *f = st->files, *tb = st->tombs;
      size_t nf = st->n_files, nt = st->n_tombs;
      int64_t ignored;
      st->files = NULL; /* the lists own them from here */
      st->tombs = NULL;
      st->n_files = st->n_live = st->n_tombs = st->cap_files = st->cap_tombs = 0;
      dk_status r2 = dk_snapshot__clist_adopt(&s->files, &s->total_bytes, f, nf, a, err);
      if (r2 == DK_OK) r2 = dk_snapshot__clist_adopt(&s->tombs, &ignored, tb, nt, a, err);
      else dk__free(a, tb);
      DK_RETURN_NOT_OK(r2);
    }
  }

  /* commit time of the version (timestamps.h: unadjusted mtime when ICT is off) */
  int64_t ict_from = dk_protocol__ict_from(&s->config);
  const dk__logfile *last = NULL;
  for (size_t i = 0; i < seg->n_all; i++)
    if (seg->all[i].kind == DK__LF_COMMIT && seg->all[i].version == s->version) last = &seg->all[i];
  s->timestamp = -1;
  if (ict_from >= 0 && s->version >= ict_from && st->last_ict >= 0 &&
      (s->from_crc || (seg->n_commits && seg->commits[seg->n_commits - 1].version == s->version)))
    s->timestamp = st->last_ict;
  if (s->timestamp < 0 && ict_from >= 0 && s->version >= ict_from && last) {
    int64_t ts;
    dk_error e2;
    dk_error_init(&e2);
    if (dk_log__commit_ict(&lg, last, &ts, &e2) == DK_OK) s->timestamp = ts;
  }
  s->tip_size = last ? last->size : -1;
  s->tip_mtime = last ? last->mtime : -1;
  if (s->timestamp < 0 && last) s->timestamp = last->mtime;
  if (s->timestamp < 0 && seg->n_cp) s->timestamp = seg->cp_files[0].mtime;
  return DK_OK;
}

static dk_snapshot *snapshot_new(dk_table *t, int small, dk_error *err) {
  dk_snapshot *s = dk__calloc(t->alloc, 1, sizeof *s);
  if (!s) {
    dk__error_set(err, DK_NOMEM, "out of memory");
    return NULL;
  }
  s->refs = 1;
  s->table = t;
  __atomic_add_fetch(&t->refs, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_init(&s->mu, NULL); /* (cannot fail with default attributes on Linux) */
  dk_snapshot__clist_init(&s->files, DK__CL_FILES);
  dk_snapshot__clist_init(&s->tombs, DK__CL_TOMBS);
  if ((small ? dk_log__state_init_small : dk_log__state_init)(&s->st, t->alloc, t->root, err) !=
      DK_OK) {
    dk_snapshot_free(s);
    return NULL;
  }
  return s;
}

/* Applies {"<key>": v} to the state. */
static dk_status apply_one(dk__state *st, const char *key, const dk_json_value *v, dk_error *err) {
  dk_json_member m;
  m.key = key;
  m.klen = (uint32_t)strlen(key);
  m.value = *v;
  dk_json_value line;
  memset(&line, 0, sizeof line);
  line.type = DK_JSON_OBJECT;
  line.len = 1;
  line.u.members = &m;
  return dk_log__apply_action(st, &line, DK__FROM_CHECKPOINT, err);
}

/* PROTOCOL.md "Version Checksum File": protocol, metadata, setTransactions, domainMetadata,
 * numFiles and tableSizeBytes of the version. Returns DK_NOT_FOUND (quietly) when the file is
 * unusable, so that the caller replays instead. */
static dk_status load_from_crc(dk_snapshot *s, const dk__logfile *crc, dk_error *err) {
  dk_table *t = s->table;
  dk__log lg = dk_snapshot__log(t);
  uint8_t *data;
  size_t len;
  dk_error e2 = {0};
  if (dk_log__read_file(&lg, crc, &data, &len, &e2) != DK_OK) return DK_NOT_FOUND;
  dk_arena ar;
  dk__arena_init(&ar, t->alloc, 16 * 1024);
  dk_json_value *j;
  dk_status st = DK_NOT_FOUND;
  int64_t nf, bytes;
  if (dk__json_parse(&j, &ar, (const char *)data, len, &e2) == DK_OK &&
      dk__json_as_i64(dk__json_get(j, "numFiles"), &nf) &&
      dk__json_as_i64(dk__json_get(j, "tableSizeBytes"), &bytes) && nf >= 0 && bytes >= 0) {
    const dk_json_value *p = dk__json_get(j, "protocol"), *m = dk__json_get(j, "metadata");
    if (p && m && p->type == DK_JSON_OBJECT && m->type == DK_JSON_OBJECT) {
      st = apply_one(&s->st, "protocol", p, err);
      if (st == DK_OK) st = apply_one(&s->st, "metaData", m, err);
      const dk_json_value *arr = dk__json_get(j, "setTransactions");
      for (uint32_t i = 0; st == DK_OK && arr && arr->type == DK_JSON_ARRAY && i < arr->len; i++)
        st = apply_one(&s->st, "txn", &arr->u.items[i], err);
      arr = dk__json_get(j, "domainMetadata");
      for (uint32_t i = 0; st == DK_OK && arr && arr->type == DK_JSON_ARRAY && i < arr->len; i++)
        st = apply_one(&s->st, "domainMetadata", &arr->u.items[i], err);
      if (st == DK_OK) {
        s->from_crc = 1;
        s->crc_num_files = nf;
        s->total_bytes = bytes;
        int64_t ict;
        if (dk__json_as_i64(dk__json_get(j, "inCommitTimestampOpt"), &ict)) s->st.last_ict = ict;
      } else if (st != DK_NOMEM) {
        dk__error_prefix(err, "%s/_delta_log/%s", t->root, crc->name);
      }
    }
  }
  dk__arena_dispose(&ar);
  t->sto->free_buf(t->sto, data);
  return st;
}

dk_status dk_snapshot__load(dk_snapshot **out, dk_table *t, int64_t version, int metadata_only,
                            dk_error *err) {
  dk__log lg = dk_snapshot__log(t);
  *out = NULL;
  dk__segment seg;
  dk_status st = dk_log__segment_build(&seg, t->sto, t->root, version, -1, t->alloc, err);
  if (st != DK_OK) {
    dk_log__segment_dispose(&seg);
    return st;
  }
  dk_snapshot *s = snapshot_new(t, 0, err);
  if (!s) {
    dk_log__segment_dispose(&seg);
    return DK_NOMEM;
  }
  s->version = seg.version;
  if (metadata_only && seg.crc) {
    st = load_from_crc(s, seg.crc, err);
    if (st == DK_NOT_FOUND) { /* unusable checksum file: replay from scratch */
      dk_log__state_dispose(&s->st);
      st = dk_log__state_init(&s->st, t->alloc, t->root, err);
      s->from_crc = 0;
      s->total_bytes = 0;
    } else if (st == DK_OK) {
      st = finish_snapshot(s, &seg, NULL, err);
      dk_log__segment_dispose(&seg);
      if (st != DK_OK) {
        dk_snapshot_free(s);
        return st;
      }
      *out = s;
      return DK_OK;
    }
  }
  if (st == DK_OK && seg.cp_version >= 0) st = dk_log__apply_checkpoint(&lg, &s->st, &seg, err);
  if (st == DK_OK) st = dk_log__apply_commits(&lg, &s->st, seg.commits, seg.n_commits, err);
  if (st == DK_OK) st = finish_snapshot(s, &seg, NULL, err);
  dk_log__segment_dispose(&seg);
  if (st != DK_OK) {
    dk_snapshot_free(s);
    return st;
  }
  *out = s;
  return DK_OK;
}

dk_status dk_snapshot_open(dk_snapshot **out, dk_table *t, const dk_snapshot_options *opts,
                           dk_error *err) {
  *out = NULL;
  if (!t) return dk__error_set(err, DK_INVALID, "dk_snapshot_open: NULL table");
  DK_CHECK_OPTIONS_VERSION(opts, DK_SNAPSHOT_OPTIONS_VERSION, "dk_snapshot_open", err);
  if (opts && opts->by_timestamp) {
    dk__log lg = dk_snapshot__log(t);
    dk_snapshot *latest;
    DK_RETURN_NOT_OK(dk_snapshot__load(&latest, t, -1, opts->metadata_only, err));
    int64_t v = -1;
    dk__commit_times ct;
    dk_status st = dk_log__commit_times_open(&ct, &lg, dk_protocol__ict_from(&latest->config), err);
    if (st == DK_OK) st = dk_log__version_at_timestamp(&v, &lg, &ct, opts->timestamp_ms, err);
    dk_log__commit_times_dispose(&ct);
    if (st == DK_OK && v == latest->version) {
      *out = latest; /* the common "as of now" case needs no second replay */
      return DK_OK;
    }
    dk_snapshot_free(latest);
    DK_RETURN_NOT_OK(st);
    return dk_snapshot__load(out, t, v, opts->metadata_only, err);
  }
  int64_t v = opts ? opts->at_version : -1;
  if (opts && v < -1) return dk__error_set(err, DK_INVALID, "invalid version %" PRId64, v);
  return dk_snapshot__load(out, t, v, opts ? opts->metadata_only : 0, err);
}

/* A copy of src[0, n) in a new array of n + slack elements (the slack takes the commits'
 * adds without a doubling realloc of the whole array). */
static dk_status copy_array(const dk_allocator *a, void **dst, size_t *cap, const void *src,
                            size_t n, size_t slack, size_t es, dk_error *err) {
  *dst = NULL;
  *cap = 0;
  if (!n) return DK_OK;
  if (slack > (SIZE_MAX / es) - n) return dk__error_set(err, DK_NOMEM, "out of memory");
  *dst = dk__malloc(a, (n + slack) * es);
  if (!*dst) return dk__error_set(err, DK_NOMEM, "out of memory");
  memcpy(*dst, src, n * es);
  *cap = n + slack;
  return DK_OK;
}

/* Whether the commit file of old's version is still the one old was built from (same size
 * and mtime). A table deleted and re-created, or a log rewritten in place, fails this and
 * is loaded afresh; a version without a commit file (checkpoint only) is not checked. */
static dk_status tip_unchanged(bool *same, const dk_snapshot *old, dk_error *err) {
  *same = true;
  if (old->tip_size < 0) return DK_OK;
  dk_table *t = old->table;
  dk_buf name, key;
  dk__buf_init(&name, t->alloc);
  dk__buf_init(&key, t->alloc);
  dk_status st = dk_log__name_commit(&name, old->version, err);
  if (st == DK_OK) st = dk_log__file_key(&key, t->root, name.data, err);
  dk_file_info fi;
  if (st == DK_OK) st = t->sto->stat(t->sto, key.data, &fi, err);
  dk__buf_dispose(&name);
  dk__buf_dispose(&key);
  if (st == DK_NOT_FOUND) {
    if (err) dk_error_init(err);
    *same = false;
    return DK_OK;
  }
  DK_RETURN_NOT_OK(st);
  *same = fi.size == old->tip_size && fi.mtime_ms == old->tip_mtime;
  return DK_OK;
}

dk_status dk_snapshot_update(dk_snapshot **out, dk_snapshot *old, dk_error *err) {
  *out = NULL;
  dk_table *t = old->table;
  dk__log lg = dk_snapshot__log(t);
  if (old->from_crc) return dk_snapshot__load(out, t, -1, 1, err);
  bool same;
  DK_RETURN_NOT_OK(tip_unchanged(&same, old, err));
  if (!same || old->depth >= DK_SNAPSHOT__MAX_REFRESH_DEPTH)
    return dk_snapshot__load(out, t, -1, 0, err);
  dk__segment seg;
  dk_status st = dk_log__segment_build(&seg, t->sto, t->root, -1, old->version, t->alloc, err);
  if (st == DK_CORRUPT || st == DK_OUT_OF_RANGE) {
    /* the commits after `old` are not all there (e.g. log cleanup after a new checkpoint):
     * a full load from the newest checkpoint gives the same answer */
    dk_log__segment_dispose(&seg);
    if (err) dk_error_init(err);
    return dk_snapshot__load(out, t, -1, old->from_crc, err);
  }
  if (st != DK_OK) {
    dk_log__segment_dispose(&seg);
    return st;
  }
  if (seg.n_commits == 0) {
    dk_log__segment_dispose(&seg);
    *out = dk_snapshot_ref(old);
    return DK_OK;
  }
  dk_snapshot *s = snapshot_new(t, 1, err);
  if (!s) {
    dk_log__segment_dispose(&seg);
    return DK_NOMEM;
  }
  s->base = dk_snapshot_ref(old); /* keeps the old arena's strings alive */
  __atomic_add_fetch(&old->child_refs, 1, __ATOMIC_ACQ_REL);
  s->depth = old->depth + 1;
  s->version = seg.version;
  const dk__state *o = &old->st;
  dk__state *n = &s->st;
  n->protocol = o->protocol;
  n->metadata = o->metadata;
  n->has_protocol = o->has_protocol;
  n->has_metadata = o->has_metadata;
  /* the files and tombstones are not copied: the commits are replayed into an empty state
   * and applied to old's chunked lists at finish (filelist.c), sharing what they leave */
  n->n_txns = o->n_txns;
  n->n_domains = o->n_domains;
  st = copy_array(t->alloc, (void **)&n->txns, &n->cap_txns, o->txns, o->n_txns,
                  0, sizeof *o->txns, err);
  if (st == DK_OK)
    st = copy_array(t->alloc, (void **)&n->domains, &n->cap_domains, o->domains, o->n_domains,
                    0, sizeof *o->domains, err);
  for (size_t i = 0; st == DK_OK && i < n->n_txns; i++) {
    uint64_t *slot;
    bool ins;
    st = dk__hmap_upsert(&n->txn_index, n->txns[i].app_id, strlen(n->txns[i].app_id), &slot, &ins,
                        err);
    if (st == DK_OK) *slot = i;
  }
  for (size_t i = 0; st == DK_OK && i < n->n_domains; i++) {
    uint64_t *slot;
    bool ins;
    st = dk__hmap_upsert(&n->domain_index, n->domains[i].domain, strlen(n->domains[i].domain),
                        &slot, &ins, err);
    if (st == DK_OK) *slot = i;
  }
  if (st == DK_OK) st = dk_log__apply_commits(&lg, n, seg.commits, seg.n_commits, err);
  if (st == DK_OK) st = finish_snapshot(s, &seg, old, err);
  dk_log__segment_dispose(&seg);
  if (st != DK_OK) {
    dk_snapshot_free(s);
    return st;
  }
  *out = s;
  return DK_OK;
}

dk_snapshot *dk_snapshot_ref(dk_snapshot *s) {
  if (s) __atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
  return s;
}

/* A snapshot only refreshed snapshots refer to: nobody reads its lists any more (its
 * children hold the chunks they share with it), so its references to them and its cache go;
 * the strings and stats blocks the entries point into stay until the last child is freed. */
static void release_arrays(dk_snapshot *s) {
  if (__atomic_exchange_n(&s->arrays_released, 1, __ATOMIC_ACQ_REL)) return;
  dk_table *t = s->table;
  dk_snapshot__clist_dispose(&s->files, t->alloc);
  dk_snapshot__clist_dispose(&s->tombs, t->alloc);
  /* nor does anyone scan it: its cache (scan/stats.c) goes too */
  dk_snapshot__cache *c = __atomic_exchange_n(&s->cache, NULL, __ATOMIC_ACQ_REL);
  if (c) c->free(c);
}

void dk_snapshot_free(dk_snapshot *s) {
  if (!s) return;
  int left = __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
  if (left != 0) {
    if (left == __atomic_load_n(&s->child_refs, __ATOMIC_ACQUIRE)) release_arrays(s);
    return;
  }
  dk_table *t = s->table;
  if (s->cache) s->cache->free(s->cache);
  pthread_mutex_destroy(&s->mu);
  dk_snapshot__clist_dispose(&s->files, t->alloc);
  dk_snapshot__clist_dispose(&s->tombs, t->alloc);
  dk_log__state_dispose(&s->st);
  if (s->base) __atomic_sub_fetch(&s->base->child_refs, 1, __ATOMIC_ACQ_REL);
  dk_snapshot_free(s->base);
  dk__free(t->alloc, s);
  table_unref(t);
}

/* ---- accessors -------------------------------------------------------------------------- */

int64_t dk_snapshot_version(const dk_snapshot *s) { return s->version; }
int64_t dk_snapshot_timestamp(const dk_snapshot *s) { return s->timestamp; }
const char *dk_snapshot_table_root(const dk_snapshot *s) { return s->table->root; }
const dk_allocator *dk_snapshot__allocator(const dk_snapshot *s) { return s->table->alloc; }
dk_storage *dk_snapshot__storage(const dk_snapshot *s) { return s->table->sto; }
int dk_snapshot__confine(const dk_snapshot *s) { return s->table->confine; }
struct dk__exec *dk_snapshot__exec(const dk_snapshot *s) { return s->table->exec; }

dk_snapshot__cache *dk_snapshot__cache_get(const dk_snapshot *s) {
  return __atomic_load_n(&s->cache, __ATOMIC_ACQUIRE);
}
/* (the lock and the cache slot change; the snapshot's contents do not) */
void dk_snapshot__lock(const dk_snapshot *s) { pthread_mutex_lock(&((dk_snapshot *)s)->mu); }
void dk_snapshot__unlock(const dk_snapshot *s) { pthread_mutex_unlock(&((dk_snapshot *)s)->mu); }
void dk_snapshot__cache_set(const dk_snapshot *s, dk_snapshot__cache *c) {
  __atomic_store_n(&((dk_snapshot *)s)->cache, c, __ATOMIC_RELEASE);
}
const dk_protocol *dk_snapshot_protocol(const dk_snapshot *s) { return &s->st.protocol; }
const dk_metadata *dk_snapshot_metadata(const dk_snapshot *s) { return &s->st.metadata; }
const char *dk_snapshot_property(const dk_snapshot *s, const char *key) {
  return dk_protocol__property(&s->st.metadata, key);
}
int dk_snapshot_has_feature(const dk_snapshot *s, const char *name) {
  return dk_protocol__has_feature(&s->st.protocol, name);
}
const dk_type *dk_snapshot_schema(const dk_snapshot *s) { return s->schema; }
dk_column_mapping_mode dk_snapshot_column_mapping_mode(const dk_snapshot *s) { return s->cm_mode; }
dk_status dk_snapshot_arrow_schema(struct ArrowSchema *out, const dk_snapshot *s, int physical,
                                   dk_error *err) {
  return dk_schema__to_arrow(out, s->schema, physical && s->cm_mode != DK_COLUMN_MAPPING_NONE,
                             s->table->alloc, err);
}

int64_t dk_snapshot_num_files(const dk_snapshot *s) {
  return s->from_crc ? s->crc_num_files : (int64_t)s->files.n;
}
int dk_snapshot_has_file_list(const dk_snapshot *s) { return !s->from_crc; }
int64_t dk_snapshot_total_bytes(const dk_snapshot *s) { return s->total_bytes; }

void dk_snapshot__fill_entry(dk_file_entry *out, const dk_snapshot *s, int64_t i) {
  const dk__file *f = dk_snapshot__file_at(s, i);
  memset(out, 0, sizeof *out);
  out->version = DK_FILE_ENTRY_VERSION;
  out->path = f->path;
  out->size = f->size;
  out->modification_time = f->mtime;
  out->n_partition_values = f->n_pv;
  out->partition_kv = f->pv;
  if (f->extra) {
    out->tags_json = f->extra->tags;
    out->dv = f->extra->dv;
    out->base_row_id = f->extra->base_row_id;
    out->default_row_commit_version = f->extra->drcv;
  }
  out->has_base_row_id = !!(f->flags & DK__F_BRID);
  out->has_default_row_commit_version = !!(f->flags & DK__F_DRCV);
  out->index = i;
}

dk_status dk_snapshot__check_file_index(const dk_snapshot *s, int64_t i, bool end_ok,
                                        dk_error *err) {
  if (s->from_crc)
    return dk__error_set(err, DK_INVALID, "a metadata-only snapshot has no file list");
  if (i < 0 || (size_t)i > s->files.n || ((size_t)i == s->files.n && !end_ok))
    return dk__error_set(err, DK_INVALID, "file index %" PRId64 " out of range", i);
  return DK_OK;
}

dk_status dk_snapshot_file(dk_file_entry *out, const dk_snapshot *s, int64_t i, dk_error *err) {
  DK_RETURN_NOT_OK(dk_snapshot__check_file_index(s, i, false, err));
  dk_snapshot__fill_entry(out, s, i);
  return DK_OK;
}

size_t dk_snapshot_file_path(char *buf, size_t cap, const dk_snapshot *s,
                             const dk_file_entry *f) {
  dk__root r = dk_snapshot__root(s->table);
  dk_buf key;
  dk__buf_init(&key, s->table->alloc);
  dk__loc loc;
  /* a path no backend of the table serves is shown as the log has it */
  const char *p = dk_log__data_key(&loc, &key, &r, f->path, NULL) == DK_OK ? key.data : f->path;
  int n = snprintf(buf, cap, "%s", p);
  dk__buf_dispose(&key);
  return n < 0 ? 0 : (size_t)n;
}

const char *dk_file_partition_value(const dk_snapshot *s, const dk_file_entry *f,
                                    const char *column, int *is_null) {
  const char *key = column;
  if (s->cm_mode != DK_COLUMN_MAPPING_NONE) {
    const dk_field *fd = dk_schema_find(s->schema, column);
    if (fd) key = fd->physical_name;
  }
  for (size_t i = 0; i < f->n_partition_values; i++) {
    if (!strcmp(f->partition_kv[2 * i], key)) {
      const char *v = f->partition_kv[2 * i + 1];
      if (is_null) *is_null = v == NULL;
      return v;
    }
  }
  if (is_null) *is_null = 1;
  return NULL;
}

int64_t dk_snapshot_num_tombstones(const dk_snapshot *s) { return (int64_t)s->tombs.n; }

dk_status dk_snapshot_tombstone(dk_tombstone *out, const dk_snapshot *s, int64_t i,
                                dk_error *err) {
  if (i < 0 || (size_t)i >= s->tombs.n)
    return dk__error_set(err, DK_INVALID, "tombstone index %" PRId64 " out of range", i);
  const dk__tomb *t = dk_snapshot__tomb_at(s, i);
  out->path = t->path;
  out->deletion_timestamp = t->deletion_timestamp;
  out->size = t->size;
  out->data_change = t->data_change;
  return DK_OK;
}

int64_t dk_snapshot_txn_version(const dk_snapshot *s, const char *app_id) {
  for (size_t i = 0; i < s->st.n_txns; i++)
    if (!strcmp(s->st.txns[i].app_id, app_id)) return s->st.txns[i].version;
  return -1;
}

size_t dk_snapshot_num_txns(const dk_snapshot *s) { return s->st.n_txns; }

void dk_snapshot_txn(const char **app_id, int64_t *version, int64_t *last_updated,
                     const dk_snapshot *s, size_t i) {
  if (i >= s->st.n_txns) {
    if (app_id) *app_id = NULL;
    if (version) *version = -1;
    if (last_updated) *last_updated = -1;
    return;
  }
  const dk__txn *t = &s->st.txns[i];
  if (app_id) *app_id = t->app_id;
  if (version) *version = t->version;
  if (last_updated) *last_updated = t->last_updated;
}

const char *dk_snapshot_domain_metadata(const dk_snapshot *s, const char *domain) {
  for (size_t i = 0; i < s->st.n_domains; i++)
    if (!strcmp(s->st.domains[i].domain, domain))
      return s->st.domains[i].removed ? NULL : s->st.domains[i].config;
  return NULL;
}
