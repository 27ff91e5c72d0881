/*
** main.c — the `dk` command line tool: dispatches to subcommands.
*/
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: dk <command> [args]\n"
          "  parquet schema FILE            print a Parquet file's schema\n"
          "  parquet meta FILE              row groups, statistics, encodings\n"
          "  parquet cat FILE [--columns a,b.c] [--format jsonl|csv|table]\n"
          "  describe TABLE [--version N | --timestamp TS] [--json]   snapshot summary\n"
          "  history TABLE [--limit N] [--json]                       commitInfo per version\n"
          "  files TABLE [--version N | --timestamp TS] [--json] [--where EXPR] [--threads N]\n"
          "       active files (--threads: threads replaying the log; 1 = none)\n"
          "       (with --where: files read and files skipped, with the reason)\n"
          "  scan TABLE [--version N] [--columns a,b] [--where EXPR] [--limit N] [--with-metadata]\n"
          "       [--format jsonl|csv|table] [--threads N]            read rows\n"
          "  sql \"SQL\" [--format table|jsonl|csv] [--stats]         SQLite over Delta tables:\n"
          "       delta_scan('path' [, version]), delta_files('path'), delta_history('path')\n"
          "  version                        print dk's version\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "parquet")) return dk_cli_parquet(argc - 2, argv + 2);
  if (!strcmp(argv[1], "_dv")) return dk_cli_dv(argc - 2, argv + 2);
  if (!strcmp(argv[1], "_rows")) return dk_cli_rows(argc - 2, argv + 2);
  if (!strcmp(argv[1], "describe")) return dk_cli_describe(argc - 2, argv + 2);
  if (!strcmp(argv[1], "history")) return dk_cli_history(argc - 2, argv + 2);
  if (!strcmp(argv[1], "files")) return dk_cli_files(argc - 2, argv + 2);
  if (!strcmp(argv[1], "scan")) return dk_cli_scan(argc - 2, argv + 2);
  if (!strcmp(argv[1], "sql")) return dk_cli_sql(argc - 2, argv + 2);
  if (!strcmp(argv[1], "version")) {
    printf("dk %d.%d.%d\n", DK_VERSION_MAJOR, DK_VERSION_MINOR, DK_VERSION_PATCH);
    return 0;
  }
  if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(stdout);
    return 0;
  }
  fprintf(stderr, "dk: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
