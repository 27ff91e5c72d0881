/*
** log_fuzzer.c — fuzz target for log replay (src/log): the input is one commit file
** (newline-delimited JSON actions) applied to a fresh replay state, then the state is
** finished and the same commit applied again as the next version (a finished state taking
** more actions), its schemaString parsed and its protocol checked. Every error must be
** a clean status; crashes, leaks and sanitizer reports are the bugs. The first line is also
** tried as a _delta_log file name.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/replay.h"
#include "log/paths.h"
#include "log/segment.h"
#include "protocol/protocol.h"
#include "protocol/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dk__state st;
  dk_error err = {0};
  if (dk_log__state_init(&st, NULL, "/fuzz/table", &err) != DK_OK) return 0;
  st.cur_version = 1;
  if (dk_log__apply_json_file(&st, (const char *)data, size, 0, "fuzz.json", &err) == DK_OK) {
    dk_error_init(&err);
    dk_log__state_finish(&st, &err);
    st.cur_version = 2;
    if (dk_log__apply_json_file(&st, (const char *)data, size, 0, "fuzz.json", &err) == DK_OK)
      dk_log__state_finish(&st, &err);
    dk_error_init(&err);
    if (st.has_protocol) dk_protocol__check_read(&st.protocol, &err);
    if (st.has_metadata && st.metadata.schema_string) {
      const dk_type *t;
      dk_arena ar;
      dk__arena_init(&ar, NULL, 4096);
      if (dk_schema__parse(&t, &ar, st.metadata.schema_string, strlen(st.metadata.schema_string),
                           &err) == DK_OK) {
        char buf[256];
        dk_type_to_string(buf, sizeof buf, t);
        struct ArrowSchema sc;
        if (dk_schema__to_arrow(&sc, t, 1, NULL, &err) == DK_OK) sc.release(&sc);
      }
      dk__arena_dispose(&ar);
    }
  }
  dk_log__state_dispose(&st);
  /* first line as a log file name */
  char name[128];
  size_t n = 0;
  while (n < size && n < sizeof name - 1 && data[n] != '\n' && data[n] != 0) {
    name[n] = (char)data[n];
    n++;
  }
  name[n] = 0;
  dk__logfile lf;
  dk_log__parse_name(name, &lf);
  return 0;
}
