/*
** local.c — the local-filesystem storage backend (dk_storage_local_new of dk/sys/storage.h)
** over POSIX.
**
**   list_from      opendir/readdir, names >= start_name, sorted bytewise (strcmp) with qsort,
**                  fstatat per entry (entries that vanish meanwhile are skipped).
**   read           whole file (fstat size, then read until EOF; growing files are followed).
**   read_range     pread, looping on short reads; a file shorter than the range is DK_CORRUPT.
**   stat           size and mtime (ms, from st_mtim).
**   write          temp file in the same directory + fsync + rename (atomic replace).
**   put_if_absent  temp file + fsync + link() to the target (EEXIST -> DK_CONFLICT), then the
**                  temp name is unlinked: the atomic "create only if absent" Delta commit
**                  primitive (PROTOCOL.md, "Delta Log Entries": mutual exclusion of commits).
**                  Filesystems without hard links fall back to renameat2(RENAME_NOREPLACE).
**   open_write     (v2) a temp file beside the target, written in pieces; commit = fsync +
**                  rename (replace) or link (if absent, as put_if_absent); abort unlinks it.
**                  Every 8 MiB written, sync_file_range(SYNC_FILE_RANGE_WRITE) starts the
**                  writeback of what came before without waiting for it, so the commit's fsync
**                  waits for the tail only (a 200 MB Parquet file: 0.25 s of fsync at close
**                  before, most of it overlapped with encoding after). Best effort: its errors
**                  are left to the fsync.
**   read_ranges    (v2) one open, then pread per range.
**   map / unmap    (v2) mmap of the whole file, read-only, MAP_PRIVATE.
** write, put_if_absent and open_write create missing parent directories (like object stores, which have
** no directories), so a new table's _delta_log needs no separate mkdir.
** Temp files are named ".<name>.<pid>-<n>.tmp" and created with O_EXCL and mode 0666 & ~umask.
** Errors name the operation, the path and the errno text; ENOENT is DK_NOT_FOUND.
** Only regular files are read: every read opens with O_NONBLOCK (a FIFO never blocks the
** open) and fstat()s the descriptor, so a FIFO, socket, device or directory where a file is
** expected is DK_IO at once ("not a regular file (a FIFO)"), never a hang.
** Confined (dk_storage__local_new_confined, a table with dk_table_options.confine_paths):
** reads, stats and listings accept only paths at or below the root, opened with openat2
** RESOLVE_BENEATH from the root's directory so that no ".." or symlink leads out; an absolute
** symlink (which RESOLVE_BENEATH always refuses) or a kernel without openat2 falls back to
** realpath(3) and a prefix check. Writes are not confined (dk names what it writes).
** Beside the vtable, local.h: dk_storage__local_realpath for table roots.
*/
#include "storage/local.h"

#include "dk/sys/storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "util/util.h"

typedef struct local_ctx {
  const dk_allocator *alloc;
  char *root;      /* confined to this directory (absolute, no trailing '/'); NULL: not */
  size_t root_len;
} local_ctx;

static const dk_allocator *alloc_of(dk_storage *s) { return ((local_ctx *)s->ctx)->alloc; }

static dk_status sys_error(dk_error *err, int e, const char *op, const char *path) {
  char buf[256];
  const char *msg = strerror_r(e, buf, sizeof buf); /* GNU variant (_GNU_SOURCE) */
  dk_status code = (e == ENOENT || e == ENOTDIR) ? DK_NOT_FOUND : DK_IO;
  if (e == ENOMEM) code = DK_NOMEM;
  return dk__error_set(err, code, "%s %s: %s", op, path, msg);
}

/* ---- opening for reading ---------------------------------------------------------------- */

typedef enum { OPEN_FILE, OPEN_DIR, OPEN_ANY } open_kind;

static const char *kind_name(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISDIR(m)) return "a directory";
  return "not a file";
}

/* In a confined backend: the part of path below the root ("." for the root itself), or NULL
** when path lies elsewhere. */
static const char *below_root(const local_ctx *c, const char *path) {
  size_t n = c->root_len;
  if (strncmp(path, c->root, n) != 0) return NULL;
  if (path[n] == 0) return ".";
  if (n == 1) return path + 1; /* root "/" */
  if (path[n] != '/') return NULL;
  while (path[n] == '/') n++;
  return path[n] ? path + n : ".";
}

static dk_status outside_root(dk_error *err, const char *op, const char *path, const char *root,
                              const char *how) {
  return dk__error_set(err, DK_UNSUPPORTED,
                       "%s %s: %s outside the table root %s (path confinement is on)", op,
                       path, how, root);
}

/* open(2) of a path below a confined root without leaving it: openat2 RESOLVE_BENEATH; an
** absolute symlink (EXDEV: RESOLVE_BENEATH refuses every one) or no openat2 (ENOSYS, or EPERM
** from a seccomp filter) falls back to realpath(3) and a prefix check. -1 with errno set, or
** -2 when the path resolves outside the root. */
static int open_beneath(const local_ctx *c, const char *path, const char *rel, int flags) {
  int dfd = open(c->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return -1;
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = (uint64_t)flags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  int fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof how);
  int e = errno;
  close(dfd);
  if (fd >= 0 || (e != EXDEV && e != ENOSYS && e != EPERM)) {
    errno = e;
    return fd;
  }
  char *real = realpath(path, NULL);
  if (!real) return -1;
  const char *in = below_root(&(local_ctx){.root = c->root, .root_len = c->root_len}, real);
  fd = in ? open(real, flags) : -2;
  e = errno;
  free(real);
  errno = e;
  return fd;
}

/* Opens path for `op` (named in errors): O_NONBLOCK, so that opening a FIFO never waits for a
** writer, then fstat into *sb; OPEN_FILE accepts only a regular file, OPEN_DIR only a
** directory (a FIFO, socket or device is refused at once). In a confined backend, only at or
** below the root and never through a symlink leading out. */
static dk_status open_read(dk_storage *s, const char *path, const char *op, open_kind kind,
                           int *out, struct stat *sb, dk_error *err) {
  const local_ctx *c = s->ctx;
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  if (kind == OPEN_DIR) flags |= O_DIRECTORY;
  if (kind == OPEN_ANY) flags = O_PATH | O_CLOEXEC;
  int fd;
  if (c && c->root) {
    const char *rel = below_root(c, path);
    if (!rel) return outside_root(err, op, path, c->root, "lies");
    fd = open_beneath(c, path, rel, flags);
    if (fd == -2) return outside_root(err, op, path, c->root, "a symlink leads");
  } else {
    fd = open(path, flags);
  }
  if (fd < 0 && errno == ENXIO) /* open(2) of a Unix socket */
    return dk__error_set(err, DK_IO, "%s %s: not a regular file (a socket)", op, path);
  if (fd < 0 && errno == EXDEV && c && c->root)
    return outside_root(err, op, path, c->root, "a symlink leads");
  if (fd < 0) return sys_error(err, errno, op, path);
  if (fstat(fd, sb) != 0) {
    int e = errno;
    close(fd);
    return sys_error(err, e, "stat", path);
  }
  if ((kind == OPEN_FILE && !S_ISREG(sb->st_mode)) ||
      (kind == OPEN_DIR && !S_ISDIR(sb->st_mode))) {
    close(fd);
    return dk__error_set(err, DK_IO, "%s %s: not a %s (%s)", op, path,
                         kind == OPEN_DIR ? "directory" : "regular file", kind_name(sb->st_mode));
  }
  *out = fd;
  return DK_OK;
}

static int64_t mtime_ms(const struct stat *st) {
  return (int64_t)st->st_mtim.tv_sec * 1000 + (int64_t)(st->st_mtim.tv_nsec / 1000000);
}

/* ---- list ------------------------------------------------------------------------------ */

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static dk_status local_list_from(dk_storage *s, const char *dir, const char *start_name,
                                 dk_list_cb cb, void *payload, dk_error *err) {
  const dk_allocator *al = alloc_of(s);
  int lfd;
  struct stat dsb;
  dk_status st = open_read(s, dir, "list", OPEN_DIR, &lfd, &dsb, err);
  if (st) return st;
  DIR *d = fdopendir(lfd);
  if (!d) {
    int e = errno;
    close(lfd);
    return sys_error(err, e, "list", dir);
  }
  dk_arena names;
  dk__arena_init(&names, al, 0);
  dk_buf ptrs, path;
  dk__buf_init(&ptrs, al);
  dk__buf_init(&path, al);
  size_t count = 0;
  for (;;) {
    errno = 0;
    struct dirent *e = readdir(d);
    if (!e) {
      if (errno) DK_CHECK_GOTO(sys_error(err, errno, "list", dir));
      break;
    }
    const char *n = e->d_name;
    if (n[0] == '.' && (n[1] == 0 || (n[1] == '.' && n[2] == 0))) continue;
    if (start_name && strcmp(n, start_name) < 0) continue;
    char *copy = dk__arena_strndup(&names, n, strlen(n), err);
    if (!copy) DK_CHECK_GOTO(DK_NOMEM);
    DK_CHECK_GOTO(dk__buf_append(&ptrs, &copy, sizeof copy, err));
    count++;
  }
  char **v = (char **)(void *)ptrs.data;
  if (count > 1) qsort(v, count, sizeof *v, cmp_names);
  size_t dlen = strlen(dir);
  while (dlen > 1 && dir[dlen - 1] == '/') dlen--;
  int dfd = dirfd(d);
  for (size_t i = 0; i < count; i++) {
    struct stat sb;
    if (fstatat(dfd, v[i], &sb, 0) != 0) {
      /* removed since readdir: skipped; a dangling symlink is listed (as the link), so that
       * reading it fails rather than its name silently vanishing */
      if (errno == ENOENT && fstatat(dfd, v[i], &sb, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (errno != ENOENT) DK_CHECK_GOTO(sys_error(err, errno, "stat", v[i]));
    }
    dk__buf_clear(&path);
    DK_CHECK_GOTO(dk__buf_append(&path, dir, dlen, err));
    if (!(dlen == 1 && dir[0] == '/')) DK_CHECK_GOTO(dk__buf_putc(&path, '/', err));
    DK_CHECK_GOTO(dk__buf_puts(&path, v[i], err));
    dk_file_info info = {.path = path.data,
                         .size = (int64_t)sb.st_size,
                         .mtime_ms = mtime_ms(&sb),
                         .is_dir = S_ISDIR(sb.st_mode) ? 1 : 0};
    st = cb(&info, payload);
    if (st != DK_OK) goto cleanup;
  }
cleanup:
  closedir(d);
  dk__buf_dispose(&ptrs);
  dk__buf_dispose(&path);
  dk__arena_dispose(&names);
  return st;
}

/* ---- read ------------------------------------------------------------------------------ */

static dk_status local_read(dk_storage *s, const char *path, uint8_t **out, size_t *len,
                            dk_error *err) {
  const dk_allocator *al = alloc_of(s);
  *out = NULL;
  *len = 0;
  int fd;
  struct stat sb;
  DK_RETURN_NOT_OK(open_read(s, path, "read", OPEN_FILE, &fd, &sb, err));
  size_t cap = sb.st_size > 0 ? (size_t)sb.st_size : 0;
  uint8_t *buf = dk__malloc(al, cap + 1);
  if (!buf) {
    close(fd);
    return dk__error_set(err, DK_NOMEM, "read %s: out of memory (%zu bytes)", path, cap + 1);
  }
  size_t n = 0;
  for (;;) {
    if (n == cap) { /* the file grew since fstat (or st_size was 0): keep reading */
      uint8_t probe[4096];
      ssize_t r = read(fd, probe, sizeof probe);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        int e = errno;
        dk__free(al, buf);
        close(fd);
        return sys_error(err, e, "read", path);
      }
      if (r == 0) break;
      size_t ncap = cap * 2 + (size_t)r + 4096;
      uint8_t *nb = dk__realloc(al, buf, ncap + 1);
      if (!nb) {
        dk__free(al, buf);
        close(fd);
        return dk__error_set(err, DK_NOMEM, "read %s: out of memory", path);
      }
      buf = nb;
      cap = ncap;
      memcpy(buf + n, probe, (size_t)r);
      n += (size_t)r;
      continue;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      dk__free(al, buf);
      close(fd);
      return sys_error(err, e, "read", path);
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = 0; /* convenience terminator, not counted */
  *out = buf;
  *len = n;
  return DK_OK;
}

/* pread of [offset, offset+len) from fd, looping on short reads; the end of the file inside
** the range is DK_CORRUPT. */
static dk_status pread_all(int fd, const char *path, int64_t offset, void *buf, size_t len,
                           dk_error *err) {
  DK_RETURN_IF(offset < 0, DK_INVALID, err, "read %s: negative offset %lld", path,
               (long long)offset);
  DK_RETURN_IF(len > (size_t)INT64_MAX - (size_t)offset, DK_INVALID, err,
               "read %s: range overflows", path);
  size_t n = 0;
  while (n < len) {
    ssize_t r = pread(fd, (char *)buf + n, len - n, (off_t)(offset + (int64_t)n));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return sys_error(err, errno, "read", path);
    if (r == 0)
      return dk__error_set(err, DK_CORRUPT,
                           "read %s: file ends at byte %lld, inside the range [%lld, %lld)",
                           path, (long long)(offset + (int64_t)n), (long long)offset,
                           (long long)(offset + (int64_t)len));
    n += (size_t)r;
  }
  return DK_OK;
}

static dk_status local_read_range(dk_storage *s, const char *path, int64_t offset, void *buf,
                                  size_t len, dk_error *err) {
  int fd;
  struct stat sb;
  DK_RETURN_NOT_OK(open_read(s, path, "read", OPEN_FILE, &fd, &sb, err));
  dk_status st = pread_all(fd, path, offset, buf, len, err);
  close(fd);
  return st;
}

static dk_status local_read_ranges(dk_storage *s, const char *path, const dk_byte_range *r,
                                   size_t n, dk_error *err) {
  int fd;
  struct stat sb;
  DK_RETURN_NOT_OK(open_read(s, path, "read", OPEN_FILE, &fd, &sb, err));
  dk_status st = DK_OK;
  for (size_t i = 0; i < n && st == DK_OK; i++)
    st = pread_all(fd, path, r[i].offset, r[i].buf, r[i].len, err);
  close(fd);
  return st;
}

typedef struct local_map {
  void *addr;
  size_t len;
} local_map;

static dk_status local_map_file(dk_storage *s, const char *path, const void **addr,
                                size_t *len, void **token, dk_error *err) {
  *addr = NULL;
  *len = 0;
  *token = NULL;
  int fd;
  struct stat sb;
  DK_RETURN_NOT_OK(open_read(s, path, "map", OPEN_FILE, &fd, &sb, err));
  local_map *m = dk__calloc(alloc_of(s), 1, sizeof *m);
  if (!m) {
    close(fd);
    return dk__error_set(err, DK_NOMEM, "out of memory (map %s)", path);
  }
  if (sb.st_size > 0) {
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      close(fd);
      dk__free(alloc_of(s), m);
      return sys_error(err, e, "mmap", path);
    }
    m->addr = p;
    m->len = (size_t)sb.st_size;
  }
  close(fd);
  *addr = m->addr;
  *len = m->len;
  *token = m;
  return DK_OK;
}

static void local_unmap(dk_storage *s, void *token) {
  local_map *m = token;
  if (!m) return;
  if (m->addr) munmap(m->addr, m->len);
  dk__free(alloc_of(s), m);
}

static dk_status local_stat(dk_storage *s, const char *path, dk_file_info *out,
                            dk_error *err) {
  struct stat sb;
  if (((const local_ctx *)s->ctx)->root) { /* confined: resolved beneath the root */
    int fd;
    DK_RETURN_NOT_OK(open_read(s, path, "stat", OPEN_ANY, &fd, &sb, err));
    close(fd);
  } else if (stat(path, &sb) != 0) {
    return sys_error(err, errno, "stat", path);
  }
  out->path = path;
  out->size = (int64_t)sb.st_size;
  out->mtime_ms = mtime_ms(&sb);
  out->is_dir = S_ISDIR(sb.st_mode) ? 1 : 0;
  return DK_OK;
}

/* ---- write ----------------------------------------------------------------------------- */

/* mkdir -p of the directory part of path (path itself excluded). */
static dk_status make_parents(dk_storage *s, const char *path, dk_error *err) {
  char *p = dk__strdup(alloc_of(s), path);
  if (!p) return dk__error_set(err, DK_NOMEM, "out of memory");
  dk_status st = DK_OK;
  char *slash = strrchr(p, '/');
  if (slash && slash != p) {
    *slash = 0;
    for (char *c = p + 1; ; c++) {
      if (*c == '/' || *c == 0) {
        char saved = *c;
        *c = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
          st = sys_error(err, errno, "mkdir", p);
          break;
        }
        *c = saved;
        if (saved == 0) break;
      }
    }
  }
  dk__free(alloc_of(s), p);
  return st;
}

static unsigned long next_tmp_id(void) {
  static unsigned long counter;
  return __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
}

/* Creates a fresh temp file beside path (O_EXCL); returns the fd or -1 with errno set. */
static int create_temp(const char *path, dk_buf *tmp, dk_error *err) {
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
  for (int tries = 0; tries < 100; tries++) {
    dk__buf_clear(tmp);
    if (dk__buf_append(tmp, path, dirlen, err) != DK_OK ||
        dk__buf_printf(tmp, err, ".%s.%ld-%lu.tmp", path + dirlen, (long)getpid(),
                      next_tmp_id()) != DK_OK) {
      errno = ENOMEM;
      return -1;
    }
    int fd = open(tmp->data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

/* Writes data to a new temp file beside path, fsynced and closed; tmp receives its name. */
static dk_status write_temp(dk_storage *s, const char *path, const void *data, size_t len,
                            dk_buf *tmp, dk_error *err) {
  int fd = create_temp(path, tmp, err);
  if (fd < 0 && errno == ENOENT) { /* missing parent directories: create them, retry once */
    DK_RETURN_NOT_OK(make_parents(s, path, err));
    fd = create_temp(path, tmp, err);
  }
  if (fd < 0) return sys_error(err, errno, "create", tmp->len ? tmp->data : path);
  const char *p = data;
  size_t n = 0;
  int e = 0;
  while (n < len) {
    ssize_t w = write(fd, p + n, len - n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      e = errno;
      break;
    }
    n += (size_t)w;
  }
  if (!e && fsync(fd) != 0) e = errno;
  if (close(fd) != 0 && !e) e = errno;
  if (e) {
    unlink(tmp->data);
    return sys_error(err, e, "write", tmp->data);
  }
  return DK_OK;
}

/* fsync of the directory holding path, so a rename/link survives a crash (best effort). */
static void sync_parent(dk_storage *s, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return;
  char *dir = dk__strndup(alloc_of(s), path, slash == path ? 1 : (size_t)(slash - path));
  if (!dir) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  dk__free(alloc_of(s), dir);
}

static dk_status local_write(dk_storage *s, const char *path, const void *data, size_t len,
                             dk_error *err) {
  dk_buf tmp;
  dk__buf_init(&tmp, alloc_of(s));
  dk_status st = write_temp(s, path, data, len, &tmp, err);
  if (st == DK_OK) {
    if (rename(tmp.data, path) != 0) {
      int e = errno;
      unlink(tmp.data);
      st = sys_error(err, e, "rename to", path);
    } else {
      sync_parent(s, path);
    }
  }
  dk__buf_dispose(&tmp);
  return st;
}

/* Publishes the written temp file tmp under path only if path is absent (link, or an exclusive
** rename where the filesystem has no hard links); tmp is gone afterwards either way. */
static dk_status publish_if_absent(dk_storage *s, const char *tmp, const char *path,
                                   dk_error *err) {
  int rc = link(tmp, path);
  int e = rc != 0 ? errno : 0;
  bool renamed = false;
  if (rc != 0 && (e == EPERM || e == ENOTSUP)) {
    /* no hard links here: an exclusive rename is just as atomic */
    rc = renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE);
    e = rc != 0 ? errno : 0;
    renamed = rc == 0;
  }
  if (!renamed) unlink(tmp);
  if (rc == 0) {
    sync_parent(s, path);
    return DK_OK;
  }
  if (e == EEXIST)
    return dk__error_set(err, DK_CONFLICT, "create %s: file already exists (concurrent commit)",
                         path);
  if (e == EINVAL || e == ENOSYS)
    return dk__error_set(err, DK_UNSUPPORTED,
                         "create %s: the filesystem supports neither link() nor "
                         "RENAME_NOREPLACE, so an atomic put-if-absent is impossible", path);
  return sys_error(err, e, "link to", path);
}

static dk_status local_put_if_absent(dk_storage *s, const char *path, const void *data,
                                     size_t len, dk_error *err) {
  dk_buf tmp;
  dk__buf_init(&tmp, alloc_of(s));
  dk_status st = write_temp(s, path, data, len, &tmp, err);
  if (st == DK_OK) st = publish_if_absent(s, tmp.data, path, err);
  dk__buf_dispose(&tmp);
  return st;
}

/* ---- streamed write (v2) ---------------------------------------------------------------- */

/* open_write starts the writeback of every this many bytes (see the banner) */
#define LW_WRITEBACK_STEP ((uint64_t)8 << 20)

typedef struct local_writer {
  dk_storage_writer w;     /* first: the vtable handed out */
  dk_storage *s;
  int fd;                  /* temp file, -1 once closed */
  int failed;              /* a write failed: only abort may follow */
  uint64_t written;        /* bytes written so far */
  uint64_t flushed;        /* writeback started for [0, flushed) */
  dk_buf tmp;              /* temp file name */
  char *path;              /* final name */
} local_writer;

static void lw_free(local_writer *lw) {
  const dk_allocator *al = alloc_of(lw->s);
  if (lw->fd >= 0) close(lw->fd);
  dk__buf_dispose(&lw->tmp);
  dk__free(al, lw->path);
  dk__free(al, lw);
}

static dk_status lw_write(dk_storage_writer *w, const void *data, size_t len, dk_error *err) {
  local_writer *lw = (local_writer *)w;
  DK_RETURN_IF(lw->failed, DK_INVALID, err, "write %s: an earlier write failed", lw->path);
  const char *p = data;
  size_t n = 0;
  while (n < len) {
    ssize_t r = write(lw->fd, p + n, len - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      lw->failed = 1;
      return sys_error(err, errno, "write", lw->tmp.data);
    }
    n += (size_t)r;
  }
  lw->written += len;
#ifdef SYNC_FILE_RANGE_WRITE
  if (lw->written - lw->flushed >= LW_WRITEBACK_STEP) {
    (void)sync_file_range(lw->fd, (off_t)lw->flushed, (off_t)(lw->written - lw->flushed),
                          SYNC_FILE_RANGE_WRITE);
    lw->flushed = lw->written;
  }
#endif
  return DK_OK;
}

static void lw_abort(dk_storage_writer *w) {
  local_writer *lw = (local_writer *)w;
  if (!lw) return;
  if (lw->fd >= 0) {
    close(lw->fd);
    lw->fd = -1;
  }
  unlink(lw->tmp.data);
  lw_free(lw);
}

static dk_status lw_commit(dk_storage_writer *w, int if_absent, dk_error *err) {
  local_writer *lw = (local_writer *)w;
  dk_status st = DK_OK;
  int e = 0;
  if (lw->failed) st = dk__error_set(err, DK_INVALID, "commit %s: an earlier write failed", lw->path);
  if (st == DK_OK) {
    if (fsync(lw->fd) != 0) e = errno;
    if (close(lw->fd) != 0 && !e) e = errno;
    lw->fd = -1;
    if (e) st = sys_error(err, e, "write", lw->tmp.data);
  }
  if (st == DK_OK && !if_absent) {
    if (rename(lw->tmp.data, lw->path) != 0)
      st = sys_error(err, errno, "rename to", lw->path);
    else
      sync_parent(lw->s, lw->path);
  } else if (st == DK_OK) {
    st = publish_if_absent(lw->s, lw->tmp.data, lw->path, err);
  }
  if (st != DK_OK) unlink(lw->tmp.data);
  lw_free(lw);
  return st;
}

static dk_status local_open_write(dk_storage *s, const char *path, dk_storage_writer **out,
                                  dk_error *err) {
  *out = NULL;
  local_writer *lw = dk__calloc(alloc_of(s), 1, sizeof *lw);
  if (!lw) return dk__error_set(err, DK_NOMEM, "out of memory (write %s)", path);
  lw->s = s;
  lw->fd = -1;
  dk__buf_init(&lw->tmp, alloc_of(s));
  lw->path = dk__strdup(alloc_of(s), path);
  if (!lw->path) {
    lw_free(lw);
    return dk__error_set(err, DK_NOMEM, "out of memory (write %s)", path);
  }
  int fd = create_temp(path, &lw->tmp, err);
  if (fd < 0 && errno == ENOENT) {
    dk_status st = make_parents(s, path, err);
    if (st != DK_OK) {
      lw_free(lw);
      return st;
    }
    fd = create_temp(path, &lw->tmp, err);
  }
  if (fd < 0) {
    dk_status st = sys_error(err, errno, "create", lw->tmp.len ? lw->tmp.data : path);
    lw_free(lw);
    return st;
  }
  lw->fd = fd;
  lw->w.ctx = lw;
  lw->w.write = lw_write;
  lw->w.commit = lw_commit;
  lw->w.abort = lw_abort;
  *out = &lw->w;
  return DK_OK;
}

static dk_status local_remove(dk_storage *s, const char *path, dk_error *err) {
  if (unlink(path) != 0 && (errno != EISDIR || rmdir(path) != 0))
    return sys_error(err, errno, "remove", path);
  return DK_OK;
}

static void local_free_buf(dk_storage *s, void *p) { dk__free(alloc_of(s), p); }

static void local_free(dk_storage *s) {
  if (!s) return;
  const dk_allocator *al = alloc_of(s);
  dk__free(al, ((local_ctx *)s->ctx)->root);
  dk__free(al, s->ctx);
  dk__free(al, s);
}

dk_status dk_storage_local_new(dk_storage **out, const dk_allocator *alloc, dk_error *err) {
  *out = NULL;
  dk_storage *s = dk__calloc(alloc, 1, sizeof *s);
  local_ctx *c = dk__calloc(alloc, 1, sizeof *c);
  if (!s || !c) {
    dk__free(alloc, s);
    dk__free(alloc, c);
    return dk__error_set(err, DK_NOMEM, "out of memory (storage backend)");
  }
  c->alloc = alloc;
  s->version = DK_STORAGE_VERSION;
  s->ctx = c;
  s->list_from = local_list_from;
  s->read = local_read;
  s->read_range = local_read_range;
  s->stat = local_stat;
  s->write = local_write;
  s->put_if_absent = local_put_if_absent;
  s->remove = local_remove;
  s->free_buf = local_free_buf;
  s->free = local_free;
  s->open_write = local_open_write;
  s->read_ranges = local_read_ranges;
  s->map = local_map_file;
  s->unmap = local_unmap;
  *out = s;
  return DK_OK;
}

dk_status dk_storage__local_new_confined(dk_storage **out, const char *root,
                                         const dk_allocator *alloc, dk_error *err) {
  DK_RETURN_IF(!root || root[0] != '/', DK_INVALID, err,
               "path confinement needs an absolute table root, not '%s'", root ? root : "");
  DK_RETURN_NOT_OK(dk_storage_local_new(out, alloc, err));
  local_ctx *c = (*out)->ctx;
  c->root = dk__strdup(alloc, root);
  if (!c->root) {
    local_free(*out);
    *out = NULL;
    return dk__error_set(err, DK_NOMEM, "out of memory (storage backend)");
  }
  c->root_len = strlen(root);
  while (c->root_len > 1 && c->root[c->root_len - 1] == '/') c->root[--c->root_len] = 0;
  return DK_OK;
}

char *dk_storage__local_realpath(const char *path, const dk_allocator *a) {
  char *r = realpath(path, NULL);
  if (!r) return NULL;
  char *copy = dk__strdup(a, r);
  free(r);
  return copy;
}

dk_status dk_storage__read_local_file(const dk_allocator *a, const char *path, char **out,
                                      size_t *len, dk_error *err) {
  local_ctx c = {a, NULL, 0};
  dk_storage s = {.version = DK_STORAGE_VERSION, .ctx = &c};
  uint8_t *p = NULL;
  dk_status st = local_read(&s, path, &p, len, err);
  *out = (char *)p;
  return st;
}
