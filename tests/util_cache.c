/* util_cache.c - helpers of the kernel cache's suites (test_cache.c,
 * test_cache_sec.c): util_cache.h says what each does. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"
#include "util_cache.h"
#include "../codegen/cache_fs.h"

static int tu_saved_stderr = -1;   /* while stderr is captured */

int tu_cache_setup(void **state)
{
    tu_fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    strcpy(f->root, "/tmp/tjit-cache-test-XXXXXX");
    if (!mkdtemp(f->root))
        return -1;
    snprintf(f->dir, sizeof f->dir, "%s/cache", f->root);
    *state = f;
    cg_fs_warn_reset();
    return tu_scope_setup(NULL);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (flag == FTW_DP || flag == FTW_D)
        chmod(path, 0700);
    return remove(path);
}

/* rm -rf path (modes first made to allow it). */
void tu_rm_tree(const char *path)
{
    chmod(path, 0700);
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int tu_cache_teardown(void **state)
{
    tu_fixture *f = *state;
    if (tu_saved_stderr >= 0) {          /* a failed assertion inside a capture */
        dup2(tu_saved_stderr, 2);
        close(tu_saved_stderr);
        tu_saved_stderr = -1;
    }
    tu_rm_tree(f->root);
    free(f);
    return tu_scope_teardown(NULL);
}

/* ---- helpers --------------------------------------------------------------------- */

cg_key tu_key_of(const char *ir)
{
    cg_key k;
    cg_key_make(ir, strlen(ir), &k);
    return k;
}

char *tu_path_of(const tu_fixture *f, const cg_key *k, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s.o", f->dir, k->hex);
    return buf;
}

int tu_count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

bool tu_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

void tu_assert_hit(cg_cache *c, const cg_key *k, const void *want, size_t n)
{
    void *obj = (void *)1;
    size_t len = 1;
    assert_int_equal(cg_cache_get(c, k, &obj, &len), 0);
    assert_int_equal(len, n);
    assert_memory_equal(obj, want, n);
    free(obj);
}

void tu_assert_miss(cg_cache *c, const cg_key *k)
{
    void *obj = (void *)1;
    size_t len = 1;
    assert_int_equal(cg_cache_get(c, k, &obj, &len), -1);
    assert_null(obj);
    assert_int_equal(len, 0);
}

cg_cache_stats tu_stats(cg_cache *c)
{
    cg_cache_stats s;
    cg_cache_stats_get(c, &s);
    return s;
}

void tu_write_file(const char *path, const void *bytes, size_t n, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    assert_int_equal(close(fd), 0);
    assert_int_equal(chmod(path, mode), 0);
}

/* The whole file (malloc'd), its size in *n. */
uint8_t *tu_read_file(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, 0, SEEK_END), 0);
    *n = (size_t)ftell(fp);
    rewind(fp);
    uint8_t *buf = malloc(*n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, *n, fp), *n);
    fclose(fp);
    return buf;
}

/* Sends stderr to a file until tu_capture_end, which returns what was written
 * (malloc'd). The tu_cache_teardown restores stderr if an assertion fails between. */
void tu_capture_begin(const tu_fixture *f)
{
    char path[160];
    snprintf(path, sizeof path, "%s/stderr.txt", f->root);
    fflush(stderr);
    tu_saved_stderr = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(tu_saved_stderr >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
}

char *tu_capture_end(const tu_fixture *f)
{
    char path[160];
    snprintf(path, sizeof path, "%s/stderr.txt", f->root);
    fflush(stderr);
    dup2(tu_saved_stderr, 2);
    close(tu_saved_stderr);
    tu_saved_stderr = -1;
    size_t n;
    char *text = (char *)tu_read_file(path, &n);
    text[n] = 0;
    unlink(path);
    return text;
}

static int count_substr(const char *s, const char *sub)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, sub)); p += strlen(sub))
        n++;
    return n;
}

/* Fails unless text is exactly one warning line holding each of the
 * NULL-terminated substrings; frees text. */
void tu_assert_one_warning(char *text, ...)
{
    va_list ap;
    va_start(ap, text);
    if (count_substr(text, "tjit: warning: kernel cache") != 1 || count_substr(text, "\n") != 1)
        fail_msg("want one warning, got: %s", text);
    for (const char *sub; (sub = va_arg(ap, const char *));)
        if (!strstr(text, sub))
            fail_msg("warning lacks '%s': %s", sub, text);
    va_end(ap);
    free(text);
}

char *tu_put_in(const char *dir, const cg_key *k, char *buf, size_t n)
{
    cg_cache *c = cg_cache_new(dir);
    assert_int_equal(cg_cache_put(c, k, OBJ, sizeof OBJ), 0);
    assert_string_equal(cg_cache_dir(c), dir);
    cg_cache_free(c);
    int w = snprintf(buf, n, "%s/%s.o", dir, k->hex);
    assert_true(w > 0 && (size_t)w < n);
    return buf;
}

char *tu_put_fresh(const tu_fixture *f, const cg_key *k, char *buf, size_t n)
{
    return tu_put_in(f->dir, k, buf, n);
}

/* A fresh cache (a new process) on dir finds k's entry at path bad: a miss,
 * counted, one warning naming the file and the reason, the file removed; a
 * put then replaces it. */
void tu_expect_rejected_in(const tu_fixture *f, const char *dir, const cg_key *k, const char *path,
                               const char *reason)
{
    cg_fs_warn_reset();
    cg_cache *c = cg_cache_new(dir);
    tu_capture_begin(f);
    tu_assert_miss(c, k);
    tu_assert_one_warning(tu_capture_end(f), path, reason, "not loaded", NULL);
    cg_cache_stats s = tu_stats(c);
    assert_int_equal(s.corrupt, 1);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.disk_hits, 0);
    assert_false(tu_exists(path));
    assert_int_equal(cg_cache_put(c, k, OBJ, sizeof OBJ), 0);
    cg_cache_free(c);
    c = cg_cache_new(dir);
    tu_assert_hit(c, k, OBJ, sizeof OBJ);
    assert_int_equal(tu_stats(c).corrupt, 0);
    cg_cache_free(c);
}

void tu_expect_rejected(const tu_fixture *f, const cg_key *k, const char *path, const char *reason)
{
    tu_expect_rejected_in(f, f->dir, k, path, reason);
}

void tu_put_twice_and_get(cg_cache *c)
{
    cg_key k1 = tu_key_of("k1"), k2 = tu_key_of("k2");
    assert_int_equal(cg_cache_put(c, &k1, OBJ, sizeof OBJ), 0);
    assert_int_equal(cg_cache_put(c, &k2, OBJ2, sizeof OBJ2), 0);
    tu_assert_hit(c, &k1, OBJ, sizeof OBJ);
    tu_assert_hit(c, &k2, OBJ2, sizeof OBJ2);
    tu_assert_miss(c, &(cg_key){0});                  /* an empty key: never on disk */
}

/* A directory that can never be made (under a regular file): works as root too. */
