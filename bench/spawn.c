/*
** spawn.c — bench helper `bench_spawn REPORT CMD [ARGS...]`, used by bench/run.py.
**
** Runs CMD as a child of this small process and writes its resource usage to the file
** REPORT as one JSON object {"status", "maxrss_kb", "utime", "stime"}; exits with CMD's exit
** code (128 + signal if it was killed). CMD's stdin/stdout/stderr are inherited.
**
** Why: Linux records the peak RSS of the memory image a process had *before* exec() in its
** ru_maxrss, and a forked child's image is a copy of its parent's. Measured directly from a
** big runner (Python with pyarrow loaded, or holding a large output), every child would
** report at least the runner's RSS. Forked from this tiny process instead, CMD's ru_maxrss
** is its own peak (plus at most this helper's ~1 MiB).
*/
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static double tv_seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6; }

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s REPORT CMD [ARGS...]\n", argv[0]);
    return 2;
  }
  FILE *report = fopen(argv[1], "w");
  if (!report) {
    fprintf(stderr, "bench_spawn: %s: %s\n", argv[1], strerror(errno));
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "bench_spawn: fork: %s\n", strerror(errno));
    return 2;
  }
  if (pid == 0) {
    fclose(report);
    execvp(argv[2], argv + 2);
    fprintf(stderr, "bench_spawn: %s: %s\n", argv[2], strerror(errno));
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) {
      fprintf(stderr, "bench_spawn: wait4: %s\n", strerror(errno));
      return 2;
    }
  }
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  fprintf(report, "{\"status\": %d, \"maxrss_kb\": %ld, \"utime\": %.6f, \"stime\": %.6f}\n",
          rc, ru.ru_maxrss, tv_seconds(ru.ru_utime), tv_seconds(ru.ru_stime));
  fclose(report);
  return rc;
}
