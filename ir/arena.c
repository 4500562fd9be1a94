/* arena.c - the bump allocator behind every graph (see arena.h).
 *
 * Chunks grow geometrically (4 KiB, then as large as everything held so far,
 * capped at 1 MiB), so a small graph costs one small chunk and a large one a
 * few dozen big ones. A request larger than a quarter of the next chunk gets a
 * chunk of its own, linked behind the head so the head's free space is kept.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

#define ARENA_ALIGN _Alignof(max_align_t)
#define ARENA_MIN_CHUNK ((size_t)4 << 10)
#define ARENA_MAX_CHUNK ((size_t)1 << 20)

struct ir_chunk {
    ir_chunk *next;
    size_t size; /* usable bytes after the header */
    _Alignas(max_align_t) char data[];
};

void ir_arena_init(ir_arena *a) { memset(a, 0, sizeof *a); }

static size_t align_up(size_t n) { return (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1); }

static ir_chunk *chunk_new(ir_arena *a, size_t size)
{
    ir_chunk *c = malloc(sizeof *c + size);
    if (!c)
        return NULL;
    c->size = size;
    a->total += sizeof *c + size;
    return c;
}

void *ir_arena_alloc(ir_arena *a, size_t size)
{
    if (size > SIZE_MAX / 4)
        return NULL;
    size = align_up(size ? size : 1);
    if ((size_t)(a->end - a->cur) >= size) {
        void *p = a->cur;
        a->cur += size;
        return p;
    }
    size_t next = a->total < ARENA_MIN_CHUNK ? ARENA_MIN_CHUNK : a->total;
    if (next > ARENA_MAX_CHUNK)
        next = ARENA_MAX_CHUNK;
    if (size > next / 4) {
        /* A big piece: its own chunk, behind the head (or as the head when
         * there is none), so the head's free space stays usable. */
        ir_chunk *c = chunk_new(a, size);
        if (!c)
            return NULL;
        if (a->head) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = NULL;
            a->head = c;
            a->cur = a->end = c->data + size;
        }
        return c->data;
    }
    ir_chunk *c = chunk_new(a, next);
    if (!c)
        return NULL;
    c->next = a->head;
    a->head = c;
    a->cur = c->data + size;
    a->end = c->data + next;
    return c->data;
}

void *ir_arena_calloc(ir_arena *a, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / 4 / size)
        return NULL;
    void *p = ir_arena_alloc(a, count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

char *ir_arena_strndup(ir_arena *a, const char *s, size_t n)
{
    char *p = ir_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void ir_arena_release(ir_arena *a)
{
    for (ir_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    ir_arena_init(a);
}
