/* util_cache.h - helpers of the kernel cache's suites (test_cache.c,
 * test_cache_sec.c): a fresh directory per test, gets that must hit or miss,
 * files read and written whole, stderr captured and its warnings checked.
 * Include after <cmocka.h> and its prerequisites.
 */
#ifndef TJ_TEST_UTIL_CACHE_H
#define TJ_TEST_UTIL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../codegen/cache.h"

#define HDR 120     /* the disk header's size (cache.c) */
#define MAC_AT 88   /* where its MAC starts: it covers bytes [0, MAC_AT) and the payload */

/* Two reasons an entry is refused (cache_fs.h has them all). */
#define CORRUPT "is truncated or corrupt"
#define BAD_MAC "fails authentication"

static const char OBJ[] = "\x7f" "ELF pretend object code \x00\x01\x02 with bytes";
static const char OBJ2[] = "a different object, somewhat longer than the first one";
/* What an attacker would like us to run. */
static const char ATTACK[] = "\x7f" "ELF planted code: would run as the victim";

typedef struct tu_fixture {
    char root[64];     /* the temp directory (mode 0700) */
    char dir[128];     /* root/cache: the cache directory of most tests */
} tu_fixture;

/* cmocka setup and teardown of each test: a fresh fixture in *state (no
 * warning printed yet), and everything under it removed after (stderr given
 * back if a failed assertion left it captured). */
int tu_cache_setup(void **state);
int tu_cache_teardown(void **state);

/* rm -rf path (modes first made to allow it). */
void tu_rm_tree(const char *path);
cg_key tu_key_of(const char *ir);
/* f->dir/<hex>.o in buf. */
char *tu_path_of(const tu_fixture *f, const cg_key *k, char *buf, size_t n);
/* Names in dir but "." and ".."; 0 when it cannot be read. */
int tu_count_files(const char *dir);
/* lstat succeeds (a dangling link exists). */
bool tu_exists(const char *path);
void tu_assert_hit(cg_cache *c, const cg_key *k, const void *want, size_t n);
void tu_assert_miss(cg_cache *c, const cg_key *k);
cg_cache_stats tu_stats(cg_cache *c);
/* Writes the file whole, then chmods it to mode. */
void tu_write_file(const char *path, const void *bytes, size_t n, mode_t mode);
/* The whole file (malloc'd, one byte spare), its size in *n. */
uint8_t *tu_read_file(const char *path, size_t *n);

/* Sends stderr to a file until tu_capture_end, which returns what was written
 * (malloc'd). */
void tu_capture_begin(const tu_fixture *f);
char *tu_capture_end(const tu_fixture *f);
/* Fails unless text is exactly one warning line holding each of the
 * NULL-terminated substrings; frees text. */
void tu_assert_one_warning(char *text, ...);

/* Writes OBJ under key k with a fresh cache on dir (f->dir); returns the
 * file's path in buf. */
char *tu_put_in(const char *dir, const cg_key *k, char *buf, size_t n);
char *tu_put_fresh(const tu_fixture *f, const cg_key *k, char *buf, size_t n);
/* A fresh cache (a new process) on dir (f->dir) finds k's entry at path bad:
 * a miss, counted, one warning naming the file and the reason, the file
 * removed; a put then replaces it. */
void tu_expect_rejected_in(const tu_fixture *f, const char *dir, const cg_key *k, const char *path,
                           const char *reason);
void tu_expect_rejected(const tu_fixture *f, const cg_key *k, const char *path, const char *reason);
/* Two puts, their gets and a get of an empty key: all through memory when
 * the disk layer is off. */
void tu_put_twice_and_get(cg_cache *c);

#endif
