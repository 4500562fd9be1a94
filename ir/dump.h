/* dump.h - compile-stage dumps (TJIT_DUMP, TJIT_DUMP_DIR; dump.c). */
#ifndef TJ_IR_DUMP_H
#define TJ_IR_DUMP_H

#include <stdbool.h>

/* Whether stage is in the comma-separated list stages (NULL: $TJIT_DUMP). */
bool ir_dump_enabled(const char *stages, const char *stage);
/* Writes one dump of stage for graph name to stderr or $TJIT_DUMP_DIR. */
int ir_dump_text(const char *stage, const char *name, const char *text);

#endif
