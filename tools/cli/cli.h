/* cli.h — subcommand entry points of the dk tool. Each returns the process exit code. */
#ifndef DK_CLI_H
#define DK_CLI_H
#include "dk/common.h"
/* Prints the usage lines of command `name` to stderr and returns 2 (main.c). */
int dk_cli_usage(const char *name);
int dk_cli_parquet(int argc, char **argv);
/* `dk parquet write OUT --from IN` (cmd_parquet_write.c); argv starts at OUT. */
int dk_cli_parquet_write(int argc, char **argv);
/* Hidden: `dk _dv TABLE_ROOT DESCRIPTOR_JSON` prints a DV's deleted rows (tests only). */
int dk_cli_dv(int argc, char **argv);
/* Hidden: `dk _rows TABLE [--where EXPR] ...` rows the single-file reader selects (tests). */
int dk_cli_rows(int argc, char **argv);
int dk_cli_describe(int argc, char **argv);
int dk_cli_history(int argc, char **argv);
int dk_cli_files(int argc, char **argv);
int dk_cli_scan(int argc, char **argv);
/* Writing commands (cmd_txn.c): create, vacuum, restore. Exit 4 on a commit conflict. */
int dk_cli_create(int argc, char **argv);
int dk_cli_vacuum(int argc, char **argv);
int dk_cli_restore(int argc, char **argv);
int dk_cli_checkpoint(int argc, char **argv);
int dk_cli_write(int argc, char **argv);
/* `dk sql "SQL" [--format table|jsonl|csv] [--stats]` (cmd_sql.c). */
int dk_cli_sql(int argc, char **argv);
/* `dk files ... --where EXPR` (cmd_scan.c): selected and skipped files. */
int dk_cli_files_where(int argc, char **argv);
/* Shared by describe/files/history (cmd_describe.c). */
struct dk_snapshot_options;
struct dk_table;
struct dk_snapshot;
int dk_cli_snapshot_args(int argc, char **argv, const char **table,
                         struct dk_snapshot_options *o, int *json, int64_t *limit);
int dk_cli_open(const char *uri, const struct dk_snapshot_options *o, struct dk_table **t,
                struct dk_snapshot **s);
void dk_cli_format_ts(char *buf, size_t cap, int64_t ms);
/* storage_opts.c: `--storage-option KEY=VALUE` (-1 when malformed), s3:// URIs and the
** process's S3 backend for them (*out = NULL for a local path). */
struct dk_storage;
int dk_cli_storage_option(const char *kv);
int dk_cli_is_object_uri(const char *uri);
dk_status dk_cli_storage_for(const char *uri, struct dk_storage **out, dk_error *err);
/* Prints a stream's rows to stdout (print_stream.c): format is a CLI_PRINT_* value (or'd with
** CLI_PRINT_NO_HEADER), or -1 to only count; at most limit rows (-1 = all); *rows gets the count.
** Errors go to stderr as "dk CMD: ..."; returns 0, or 1 on an error. */
struct ArrowArrayStream;
int dk_cli_print_stream(struct ArrowArrayStream *st, int format, int64_t limit, const char *cmd,
                        int64_t *rows);
#endif
