/*
** standalone_driver.c — replays fuzz corpora without libFuzzer (gcc, CI, sanitizers).
**
** Usage: <target>_replay FILE_OR_DIR...  Each file is fed once to LLVMFuzzerTestOneInput.
*/
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  size_t got = fread(buf, 1, (size_t)(n > 0 ? n : 0), f);
  fclose(f);
  LLVMFuzzerTestOneInput(buf, got);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      DIR *d = opendir(argv[i]);
      struct dirent *e;
      while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) count += run_file(p) == 0;
      }
      if (d) closedir(d);
    } else {
      count += run_file(argv[i]) == 0;
    }
  }
  printf("replayed %d inputs\n", count);
  return 0;
}
