/* cmd_parquet.c — `dk parquet schema|meta|cat` (placeholder until the reader lands). */
#include <stdio.h>

#include "cli.h"

int dk_cli_parquet(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "dk parquet: not built yet\n");
  return 2;
}
