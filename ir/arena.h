/* arena.h - a bump allocator for graph memory: chunks taken from malloc,
 * handed out in aligned pieces, and freed all at once.
 *
 * Every node, attribute array and name of an ir_graph lives in the graph's
 * arena, so freeing a graph is one walk over a short list of chunks and no
 * error path can leak a piece of a graph.
 */
#ifndef TJ_IR_ARENA_H
#define TJ_IR_ARENA_H

#include <stddef.h>

typedef struct ir_chunk ir_chunk;

typedef struct ir_arena {
    ir_chunk *head;   /* newest chunk first */
    char *cur, *end;  /* free space of the head chunk */
    size_t total;     /* bytes taken from malloc, headers included */
} ir_arena;

/* An empty arena (no memory held yet); same as zero-initializing it. */
void ir_arena_init(ir_arena *a);
/* size bytes aligned for any type, or NULL when malloc fails (or size is
 * absurd). The memory is not cleared. */
void *ir_arena_alloc(ir_arena *a, size_t size);
/* Same, cleared to zero. */
void *ir_arena_calloc(ir_arena *a, size_t count, size_t size);
/* A NUL-terminated copy of s[0..n), or NULL when out of memory. */
char *ir_arena_strndup(ir_arena *a, const char *s, size_t n);
/* Frees every chunk; the arena is empty again and can be reused. */
void ir_arena_release(ir_arena *a);

#endif
