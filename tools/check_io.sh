#!/usr/bin/env bash
# check_io.sh — every byte libdk reads or writes goes through dk_storage (include/dk/sys/
# storage.h): outside src/storage/, no file of src/ may call the C library's or the kernel's
# file functions (open, pread, mmap, stat, realpath, fopen, opendir, unlink, rename, ...) or
# include the headers that declare them. Comments are stripped first (gcc -fpreprocessed), so
# prose may name them; a member call (s->read(...), w.write(...)) is a backend's, not libc's.
set -euo pipefail
cd "$(dirname "$0")/.."
calls='open|openat|creat|close|read|pread|pwrite|write|lseek|mmap|munmap|msync|stat|fstat|lstat|fstatat|statx|realpath|getcwd|chdir|fopen|freopen|fdopen|fclose|fread|fwrite|fgets|opendir|fdopendir|readdir|closedir|scandir|access|faccessat|unlink|unlinkat|rename|renameat|renameat2|link|linkat|symlink|mkdir|mkdirat|rmdir|truncate|ftruncate|fsync|fdatasync|memfd_create|mkstemp|tmpfile|dup|dup2'
headers='fcntl\.h|sys/mman\.h|sys/stat\.h|dirent\.h|sys/uio\.h'
rc=0
while IFS= read -r f; do
  # calls: a name from the list, not part of a longer identifier nor a member (-> or .)
  hits=$(gcc -fpreprocessed -dD -E -P "$f" 2>/dev/null |
         grep -nE "(^|[^A-Za-z0-9_>.])($calls)[[:space:]]*\(" | grep -vE "^[0-9]+:[[:space:]]*#" || true)
  incs=$(grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*<($headers)>" "$f" || true)
  if [ -n "$hits$incs" ]; then
    echo "check_io: $f reaches the filesystem directly (use dk_storage / io/source.h / io/sink.h):"
    [ -n "$hits" ] && echo "$hits" | sed 's/^/  (comment-free line) /'
    [ -n "$incs" ] && echo "$incs" | sed 's/^/  /'
    rc=1
  fi
done < <(find src -name '*.[ch]' -not -path 'src/storage/*' | sort)
[ $rc = 0 ] && echo "check_io: no file of src/ outside src/storage/ touches the filesystem"
exit $rc
