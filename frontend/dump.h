/* dump.h - internal to the frontend: compile-stage dumps (dump.c). */
#ifndef TJ_FE_DUMP_H
#define TJ_FE_DUMP_H

#include <stdbool.h>

/* Whether stage is in the comma-separated list stages (NULL: $TJIT_DUMP). */
bool fe_dump_enabled(const char *stages, const char *stage);
/* Writes one dump of stage for graph name to stderr or $TJIT_DUMP_DIR. */
int fe_dump_text(const char *stage, const char *name, const char *text);

#endif
