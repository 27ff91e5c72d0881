/*
** write/writer.h — what src/protocol's Delta statistics need from a Parquet writer beyond
** dk/parquet.h (library-internal, not API).
*/
#ifndef DK_PARQUET_WRITE_WRITER_H
#define DK_PARQUET_WRITE_WRITER_H

#include "dk/parquet.h"

/* 1 once dk_parquet_writer_close succeeded. */
int dk_pqw__writer_closed(const dk_parquet_writer *w);
/* Rows in finished row groups (all rows after close). */
int64_t dk_pqw__writer_num_rows(const dk_parquet_writer *w);

#endif /* DK_PARQUET_WRITE_WRITER_H */
