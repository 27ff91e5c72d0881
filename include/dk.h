/**
 * @file dk.h
 * @brief Umbrella header of dk, a native implementation of the Delta Lake protocol.
 *
 * This header only includes the public module headers under `dk/`. Anything not under
 * `include/` is internal and not API. Backend authors also include the headers under `dk/sys/`.
 */
#ifndef DK_H
#define DK_H

#include "dk/common.h"
#include "dk/arrow.h"
#include "dk/arrow_json.h"
#include "dk/parquet.h"
#include "dk/table.h"
#include "dk/schema.h"
#include "dk/snapshot.h"
#include "dk/history.h"
#include "dk/expr.h"
#include "dk/scan.h"
#include "dk/variant.h"
#include "dk/changes.h"
#include "dk/sys/storage.h"

#endif /* DK_H */
