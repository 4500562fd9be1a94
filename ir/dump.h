/* dump.h - compile-stage dumps (TJIT_DUMP, TJIT_DUMP_DIR; dump.c). */
#ifndef TJ_IR_DUMP_H
#define TJ_IR_DUMP_H

#include <stdbool.h>
#include <stddef.h>

/* One dump point: what TJIT_DUMP=name prints. */
typedef struct ir_dump_stage {
    const char *name;     /* TJIT_DUMP=name */
    const char *also;     /* an older name that prints the same, or NULL */
    int level;            /* TJIT_DUMP=N selects every stage of level 1..N */
    const char *ext;      /* file suffix in $TJIT_DUMP_DIR: "tir" only for text
                             that `tjit run`/`tjit opt` parse back */
} ir_dump_stage;

enum { IR_DUMP_MAX_LEVEL = 5 };

/* Makes a table of dump points known (each entry starts with an
 * ir_dump_stage; stride: the entry's size). Called before main (from a
 * constructor) by the layer that owns the table: sched/plan.c's pipeline. */
void ir_dump_register(const void *table, int n, size_t stride);

/* Whether stage (a name or an older name) is selected by the comma list
 * stages (names, `all`, a level 1..5); NULL: $TJIT_DUMP, whose unknown names
 * are reported once per process on stderr. */
bool ir_dump_enabled(const char *stages, const char *stage);

/* 0 when every entry of the comma list stages is a stage, `all` or a level;
 * else -1 with why: the bad entry and the valid ones. */
int ir_dump_check(const char *stages, char *why, size_t n);

/* Writes one dump of stage for graph name to stderr, or to the numbered file
 * $TJIT_DUMP_DIR/NNNN-<name>.<stage>.<ext> (the directory made when
 * missing). 0, or -1 after a message on stderr. */
int ir_dump_text(const char *stage, const char *name, const char *text);

#endif
