/* test_cache_sec.c - what keeps another local user's code out of the kernel
 * cache (codegen/cache_fs.c, docs/cache.md "Security"): entries' mode, links,
 * owner and MAC, the key file, the directory and its parents (checked when
 * opened, and at each use), stale temp files; and three attacks run as a
 * second user (made with useradd when we are root, removed at the end;
 * skipped otherwise, saying so): an entry planted by another user, an entry
 * writable by others, the directory swapped mid-run. Each test gets a fresh
 * mkdtemp directory, removed after. */
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <time.h>
#include <fcntl.h>
#include <pthread.h>
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

#include "../codegen/cache.h"
#include "../codegen/cache_fs.h"
#include "../codegen/hmac.h"
#include "../codegen/jit.h"
#include "../codegen/sha256.h"
#include "util.h"
#include "util_cache.h"

/* ---- what keeps others' code out: entries --------------------------------------------- */

/* A forged entry for the template's key holding payload p (n bytes) in out:
 * the template's first MAC_AT bytes with the length set, then at MAC_AT the
 * HMAC under key, or without a key the plain SHA-256 of the payload that
 * format 1 checked. Returns its size. */
static size_t forge(const uint8_t *tmpl, const void *p, size_t n, const uint8_t *key, uint8_t *out)
{
    memcpy(out, tmpl, MAC_AT);
    for (int i = 0; i < 8; i++)
        out[80 + i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(out + HDR, p, n);
    if (key) {
        cg_hmac_ctx h;
        cg_hmac_init(&h, key, CG_KEY_BYTES);
        cg_hmac_update(&h, out, MAC_AT);
        cg_hmac_update(&h, p, n);
        cg_hmac_final(&h, out + MAC_AT);
    } else {
        cg_sha256(p, n, out + MAC_AT);
    }
    return HDR + n;
}

/* ATTACK forged (plain SHA-256) as the entry of k, from the entry at path. */
static size_t forge_from(const char *path, uint8_t *out)
{
    size_t n;
    uint8_t *tmpl = tu_read_file(path, &n);
    assert_true(n >= HDR);
    size_t len = forge(tmpl, ATTACK, sizeof ATTACK, NULL, out);
    free(tmpl);
    return len;
}

/* An entry not exactly 0600 is refused before it is read, though its MAC is
 * good: others may have written it. Two such entries: one warning. */
static void test_entry_mode(void **state)
{
    tu_fixture *f = *state;
    static const mode_t modes[] = {0644, 0666, 0604, 0620, 0400, 0700, 02600};
    cg_key k = tu_key_of("mode"), k2 = tu_key_of("mode 2");
    char path[256], path2[256];
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        tu_put_fresh(f, &k, path, sizeof path);
        assert_int_equal(chmod(path, modes[i]), 0);
        tu_expect_rejected(f, &k, path, "has a mode other than 0600");
    }
    tu_put_fresh(f, &k, path, sizeof path);
    tu_put_fresh(f, &k2, path2, sizeof path2);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(chmod(path2, 0666), 0);
    cg_fs_warn_reset();
    cg_cache *c = cg_cache_new(f->dir);
    tu_capture_begin(f);
    tu_assert_miss(c, &k);
    tu_assert_miss(c, &k2);
    tu_assert_one_warning(tu_capture_end(f), path, "has a mode other than 0600", NULL);
    assert_int_equal(tu_stats(c).corrupt, 2);
    cg_cache_free(c);
}

/* Whatever the umask, entries and the key are written 0600 (a umask that took
 * the write bit would otherwise make every entry refused). */
static void test_umask(void **state)
{
    tu_fixture *f = *state;
    assert_int_equal(mkdir(f->dir, 0700), 0);
    mode_t old = umask(0266);
    cg_key k = tu_key_of("umask");
    char path[256], key[256];
    tu_put_fresh(f, &k, path, sizeof path);
    umask(old);
    struct stat st;
    snprintf(key, sizeof key, "%s/%s", f->dir, CG_KEY_FILE);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    cg_cache *c = cg_cache_new(f->dir);
    tu_assert_hit(c, &k, OBJ, sizeof OBJ);
    cg_cache_free(c);
}

/* An entry that is a symbolic link is not followed (though its target is a
 * good entry), and the target is left alone; a FIFO does not hang a get. */
static void test_entry_symlink(void **state)
{
    tu_fixture *f = *state;
    cg_key k = tu_key_of("link");
    char path[256], real[160];
    tu_put_fresh(f, &k, path, sizeof path);
    snprintf(real, sizeof real, "%s/elsewhere.o", f->root);
    assert_int_equal(rename(path, real), 0);
    assert_int_equal(symlink(real, path), 0);
    tu_expect_rejected(f, &k, path, "is a symbolic link");
    assert_true(tu_exists(real));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink("/nonexistent/dangling.o", path), 0);
    tu_expect_rejected(f, &k, path, "is a symbolic link");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    tu_expect_rejected(f, &k, path, "is not a regular file");
}

/* A forger who rewrites payload and header with a good plain checksum (what
 * format 1 checked, or a SHA-256 of header and payload) is refused; with the
 * key file in hand the same forgery loads, so the key is what refused it. */
static void test_entry_forged(void **state)
{
    tu_fixture *f = *state;
    cg_key k = tu_key_of("forged");
    char path[256], keyfile[256];
    uint8_t forged[HDR + sizeof ATTACK];
    tu_put_fresh(f, &k, path, sizeof path);
    size_t n = forge_from(path, forged);
    tu_write_file(path, forged, n, 0600);
    tu_expect_rejected(f, &k, path, BAD_MAC);
    cg_sha256_ctx s;
    cg_sha256_init(&s);
    cg_sha256_update(&s, forged, MAC_AT);
    cg_sha256_update(&s, ATTACK, sizeof ATTACK);
    cg_sha256_final(&s, forged + MAC_AT);
    tu_write_file(path, forged, n, 0600);
    tu_expect_rejected(f, &k, path, BAD_MAC);
    /* The positive control. */
    snprintf(keyfile, sizeof keyfile, "%s/%s", f->dir, CG_KEY_FILE);
    size_t kn;
    uint8_t *key = tu_read_file(keyfile, &kn);
    assert_int_equal(kn, CG_KEY_BYTES);
    forge(forged, ATTACK, sizeof ATTACK, key, forged);
    free(key);
    tu_write_file(path, forged, n, 0600);
    cg_cache *c = cg_cache_new(f->dir);
    tu_assert_hit(c, &k, ATTACK, sizeof ATTACK);
    cg_cache_free(c);
}

/* An entry made under another directory's key is refused, and so is every
 * old entry once the key file is replaced. */
static void test_entry_other_secret(void **state)
{
    tu_fixture *f = *state;
    cg_key k = tu_key_of("other secret"), k2 = tu_key_of("other secret 2");
    char path[256], dir2[160], path2[256], keyfile[256];
    tu_put_fresh(f, &k, path, sizeof path);
    snprintf(dir2, sizeof dir2, "%s/cache2", f->root);
    tu_put_in(dir2, &k2, path2, sizeof path2);         /* dir2 and its own key */
    snprintf(path2, sizeof path2, "%s/%s.o", dir2, k.hex);
    size_t n;
    uint8_t *bytes = tu_read_file(path, &n);
    tu_write_file(path2, bytes, n, 0600);
    free(bytes);
    tu_expect_rejected_in(f, dir2, &k, path2, BAD_MAC);
    snprintf(keyfile, sizeof keyfile, "%s/%s", f->dir, CG_KEY_FILE);
    assert_int_equal(unlink(keyfile), 0);
    tu_put_fresh(f, &k2, path2, sizeof path2);           /* makes a new key */
    tu_expect_rejected(f, &k, path, BAD_MAC);
}

/* ---- the key file ---------------------------------------------------------------------- */

/* What a test does to the key file of a fresh directory. */
static void key_chmod(const char *p) { assert_int_equal(chmod(p, 0640), 0); }
static void key_short(const char *p) { assert_int_equal(truncate(p, CG_KEY_BYTES / 2), 0); }
static void key_long(const char *p) { assert_int_equal(truncate(p, CG_KEY_BYTES + 1), 0); }
static void key_dir(const char *p) { assert_int_equal(unlink(p), 0); assert_int_equal(mkdir(p, 0700), 0); }
static void key_link(const char *p)
{
    char real[300];
    snprintf(real, sizeof real, "%s.real", p);
    assert_int_equal(rename(p, real), 0);
    assert_int_equal(symlink(real, p), 0);
}
static void key_chown(const char *p) { assert_int_equal(chown(p, 12345, 12345), 0); }

/* A bad key file turns the disk layer off with one warning naming it; the
 * memory layer works on. A get on a directory without a key makes none. */
static void test_key_file(void **state)
{
    tu_fixture *f = *state;
    static const struct { void (*spoil)(const char *); const char *reason; } cases[] = {
        {key_chmod, "has a mode other than 0600"}, {key_short, "has the wrong size"},
        {key_long, "has the wrong size"},          {key_dir, "is not a regular file"},
        {key_link, "is a symbolic link"},          {key_chown, "belongs to another user"},
    };
    char keyfile[256], path[256];
    snprintf(keyfile, sizeof keyfile, "%s/%s", f->dir, CG_KEY_FILE);
    cg_key k = tu_key_of("key file");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].spoil == key_chown && geteuid() != 0)
            continue;                               /* chown needs root */
        tu_rm_tree(f->dir);
        tu_put_fresh(f, &k, path, sizeof path);
        cases[i].spoil(keyfile);
        cg_fs_warn_reset();
        cg_cache *c = cg_cache_new(f->dir);
        tu_capture_begin(f);
        tu_put_twice_and_get(c);
        tu_assert_miss(c, &k);
        tu_assert_one_warning(tu_capture_end(f), keyfile, cases[i].reason, "memory only", NULL);
        assert_null(cg_cache_dir(c));
        assert_true(tu_exists(path));                  /* entries are left as they are */
        cg_cache_free(c);
    }
    tu_rm_tree(f->dir);
    assert_int_equal(mkdir(f->dir, 0700), 0);
    cg_cache *c = cg_cache_new(f->dir);
    tu_capture_begin(f);
    tu_assert_miss(c, &k);
    char *err = tu_capture_end(f);
    assert_string_equal(err, "");
    free(err);
    assert_false(tu_exists(keyfile));
    cg_cache_free(c);
}

/* ---- the directory and its parents --------------------------------------------------- */

/* A kernel y = x * mul, compiled through cache c: fails unless it was
 * compiled (not loaded) and computes y. Skipped without a JIT. */
static void compile_through(cg_cache *c, double mul)
{
    char why[256];
    if (!cg_jit_available(why, sizeof why)) {
        print_message("no JIT (%s): the compile part is skipped\n", why);
        return;
    }
    cg_kernel k;
    cg_kernel_init(&k, CG_TILES, 0);
    int bx = cg_add_buf(&k, TJ_F32, false, 1), by = cg_add_buf(&k, TJ_F32, true, 1);
    int x = cg_add_load(&k, bx), m = cg_add_cvt(&k, cg_add_const(&k, TJ_F64, mul), TJ_F32);
    int y = cg_add_inst(&k, &(cg_inst){.k = CG_CALL, .dt = TJ_F32, .op = OP_mul, .cdt = TJ_F32, .a = {x, m}});
    cg_add_store(&k, y, by);
    cg_compiled out;
    assert_int_equal(cg_jit_get(&k, c, 0, &out), 0);
    assert_int_equal(out.origin, CG_FROM_COMPILE);
    enum { N = 100 };
    float xs[N], ys[N];
    for (int i = 0; i < N; i++)
        xs[i] = (float)i - 50.0f;
    int64_t sz[5] = {N, N, 1, 1, 1};
    out.fn((char *[]){(char *)xs, (char *)ys}, 0, 1, sz);
    for (int i = 0; i < N; i++)
        assert_true(ys[i] == xs[i] * (float)mul);
    cg_jit_release(out.fn);
    cg_compiled_clear(&out);
}

/* A group-writable directory is refused with one warning; memory and compiles
 * work on. One made group-writable while in use is refused at its next use. */
static void test_dir_group_writable(void **state)
{
    tu_fixture *f = *state;
    assert_int_equal(mkdir(f->dir, 0700), 0);
    assert_int_equal(chmod(f->dir, 0770), 0);
    cg_cache *c = cg_cache_new(f->dir);
    tu_capture_begin(f);
    tu_put_twice_and_get(c);
    compile_through(c, 1.0 + (double)(getpid() % 1000) / 1024.0);
    tu_assert_one_warning(tu_capture_end(f), f->dir, "writable by group or others", "memory only", NULL);
    assert_int_equal(tu_count_files(f->dir), 0);
    assert_null(cg_cache_dir(c));
    cg_cache_free(c);

    assert_int_equal(chmod(f->dir, 0700), 0);
    cg_fs_warn_reset();
    c = cg_cache_new(f->dir);
    cg_cache_set_mem_limit(c, 0);
    cg_key k = tu_key_of("group writable");
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    tu_assert_hit(c, &k, OBJ, sizeof OBJ);
    assert_int_equal(chmod(f->dir, 0770), 0);
    tu_capture_begin(f);
    tu_assert_miss(c, &k);
    tu_assert_one_warning(tu_capture_end(f), f->dir, "writable by group or others", NULL);
    assert_null(cg_cache_dir(c));
    cg_cache_free(c);
}

/* A parent others can write (not sticky) is refused, nothing is made under
 * it, and a bad grandparent is as bad. */
static void test_parent_writable(void **state)
{
    tu_fixture *f = *state;
    static const mode_t modes[] = {0777, 0775, 0757, 0770};
    char pub[160], dir[200], deep[220];
    snprintf(pub, sizeof pub, "%s/pub", f->root);
    snprintf(dir, sizeof dir, "%s/cache", pub);
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        assert_int_equal(mkdir(pub, 0700), 0);
        assert_int_equal(chmod(pub, modes[i]), 0);
        cg_fs_warn_reset();
        cg_cache *c = cg_cache_new(dir);
        tu_capture_begin(f);
        tu_put_twice_and_get(c);
        tu_assert_one_warning(tu_capture_end(f), pub, "writable by group or others and not sticky",
                           "memory only", NULL);
        assert_false(tu_exists(dir));
        cg_cache_free(c);
        assert_int_equal(rmdir(pub), 0);
    }
    assert_int_equal(mkdir(pub, 0777), 0);
    assert_int_equal(chmod(pub, 0777), 0);
    snprintf(deep, sizeof deep, "%s/a", pub);
    assert_int_equal(mkdir(deep, 0700), 0);
    snprintf(deep, sizeof deep, "%s/a/cache", pub);
    cg_fs_warn_reset();
    cg_cache *c = cg_cache_new(deep);
    tu_capture_begin(f);
    tu_put_twice_and_get(c);
    tu_assert_one_warning(tu_capture_end(f), pub, "not sticky", NULL);
    cg_cache_free(c);
}

/* A sticky parent others can write (/tmp) is fine. */
static void test_parent_sticky(void **state)
{
    tu_fixture *f = *state;
    static const mode_t modes[] = {01777, 01770};
    char pub[160], dir[200], path[300];
    snprintf(pub, sizeof pub, "%s/pub", f->root);
    snprintf(dir, sizeof dir, "%s/cache", pub);
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        assert_int_equal(mkdir(pub, 0700), 0);
        assert_int_equal(chmod(pub, modes[i]), 0);
        cg_key k = tu_key_of("sticky");
        tu_capture_begin(f);
        tu_put_in(dir, &k, path, sizeof path);
        cg_cache *c = cg_cache_new(dir);
        tu_assert_hit(c, &k, OBJ, sizeof OBJ);
        char *err = tu_capture_end(f);
        assert_string_equal(err, "");
        free(err);
        assert_int_equal(tu_stats(c).disk_hits, 1);
        cg_cache_free(c);
        tu_rm_tree(pub);
    }
}

/* The path may go through links (absolute, relative), ".", ".." and be
 * relative to the working directory; a loop of links is refused. */
static void test_dir_paths(void **state)
{
    tu_fixture *f = *state;
    char real[160], p[220], path[300], cwd[4096];
    cg_key k = tu_key_of("paths");
    snprintf(real, sizeof real, "%s/real", f->root);
    assert_int_equal(mkdir(real, 0700), 0);
    snprintf(p, sizeof p, "%s/link", f->root);
    assert_int_equal(symlink(real, p), 0);
    snprintf(p, sizeof p, "%s/rel", f->root);
    assert_int_equal(symlink("real", p), 0);
    snprintf(p, sizeof p, "%s/link/cache", f->root);
    tu_put_in(p, &k, path, sizeof path);
    snprintf(path, sizeof path, "%s/cache/%s.o", real, k.hex);
    assert_true(tu_exists(path));
    static const char *const ways[] = {"%s/rel/cache", "%s/real/../link/./cache/", "%s//real/cache"};
    for (size_t i = 0; i < sizeof ways / sizeof *ways; i++) {
        snprintf(p, sizeof p, ways[i], f->root);
        cg_cache *c = cg_cache_new(p);
        tu_assert_hit(c, &k, OBJ, sizeof OBJ);
        assert_int_equal(tu_stats(c).disk_hits, 1);
        cg_cache_free(c);
    }
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(f->root), 0);
    cg_cache *c = cg_cache_new("rel/cache");
    tu_assert_hit(c, &k, OBJ, sizeof OBJ);
    assert_int_equal(tu_stats(c).disk_hits, 1);
    cg_cache_free(c);
    assert_int_equal(chdir(cwd), 0);

    snprintf(p, sizeof p, "%s/loop1", f->root);
    assert_int_equal(symlink("loop2", p), 0);
    snprintf(p, sizeof p, "%s/loop2", f->root);
    assert_int_equal(symlink("loop1", p), 0);
    snprintf(p, sizeof p, "%s/loop1/cache", f->root);
    c = cg_cache_new(p);
    tu_capture_begin(f);
    tu_put_twice_and_get(c);
    tu_assert_one_warning(tu_capture_end(f), p, "cannot be opened", "symbolic links", NULL);
    cg_cache_free(c);
}

/* Temp files a killed writer left (".*.tmp" older than a minute) are removed
 * when the directory is next opened; newer ones and other files stay. */
static void test_stale_tmp(void **state)
{
    tu_fixture *f = *state;
    cg_key k = tu_key_of("stale");
    char path[256], p[6][300];
    tu_put_fresh(f, &k, path, sizeof path);
    static const struct { const char *name; int age; bool dir, stays; } files[] = {
        {".%s.o.999.0.tmp", 120, false, false}, {".key.999.1.tmp", 3600, false, false},
        {".%s.o.999.2.tmp", 30, false, true},   {".%s.o.999.3.tmp", 0, false, true},
        {"notes.txt", 3600, false, true},       {".old.tmp", 3600, true, true},
    };
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (int i = 0; i < 6; i++) {
        char name[100];
        snprintf(name, sizeof name, files[i].name, k.hex);
        snprintf(p[i], sizeof p[i], "%s/%s", f->dir, name);
        if (files[i].dir)
            assert_int_equal(mkdir(p[i], 0700), 0);
        else
            tu_write_file(p[i], "partial", 7, 0600);
        struct timespec t[2] = {{now.tv_sec - files[i].age, 0}, {now.tv_sec - files[i].age, 0}};
        assert_int_equal(utimensat(AT_FDCWD, p[i], t, 0), 0);
    }
    cg_cache *c = cg_cache_new(f->dir);
    tu_assert_hit(c, &k, OBJ, sizeof OBJ);
    cg_cache_free(c);
    for (int i = 0; i < 6; i++)
        if (tu_exists(p[i]) != files[i].stays)
            fail_msg("%s: want it %s", p[i], files[i].stays ? "kept" : "removed");
}

/* An entry's name taken by a directory: the write fails (one warning, memory
 * only), and a get of it is refused. */
static void test_write_fails(void **state)
{
    tu_fixture *f = *state;
    cg_key k = tu_key_of("write fails"), k2 = tu_key_of("write fails 2");
    char path[256];
    tu_put_fresh(f, &k2, path, sizeof path);
    tu_path_of(f, &k, path, sizeof path);
    assert_int_equal(mkdir(path, 0700), 0);
    cg_cache *c = cg_cache_new(f->dir);
    tu_capture_begin(f);
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    tu_assert_hit(c, &k, OBJ, sizeof OBJ);
    tu_assert_one_warning(tu_capture_end(f), f->dir, "cannot be written", "Is a directory", "memory only", NULL);
    assert_null(cg_cache_dir(c));
    cg_cache_free(c);
    c = cg_cache_new(f->dir);
    tu_capture_begin(f);
    tu_assert_miss(c, &k);
    tu_assert_one_warning(tu_capture_end(f), path, "is not a regular file", NULL);
    tu_assert_hit(c, &k2, OBJ, sizeof OBJ);
    cg_cache_free(c);
}

/* ---- a second user ---------------------------------------------------------------------- */

#define ATTACKER "tjit-cache-atk"

static struct {
    bool ok;               /* uid/gid usable */
    bool made;             /* the user is ours to delete */
    uid_t uid;
    gid_t gid;
    char why[160];         /* why not ok */
} atk;

/* As root: a second user for the attacks (useradd; without it, an unused uid
 * has the same effect on permissions). */
static int group_setup(void **state)
{
    if (geteuid() != 0) {
        snprintf(atk.why, sizeof atk.why, "not root (euid %d): cannot make a second user",
                 (int)geteuid());
        return 0;
    }
    int rc = system("useradd --system --no-create-home --shell /bin/false " ATTACKER " >/dev/null 2>&1");
    struct passwd *pw = getpwnam(ATTACKER);
    if (pw) {
        atk.uid = pw->pw_uid;
        atk.gid = pw->pw_gid;
        atk.made = true;
    } else {
        for (atk.uid = 59999; getpwuid(atk.uid) && atk.uid > 1000; atk.uid--)
            ;
        atk.gid = (gid_t)atk.uid;
        printf("useradd failed (status %d): the attacker is the unused uid %d\n", rc, (int)atk.uid);
    }
    atk.ok = atk.uid != 0;
    return 0;
}

static int group_teardown(void **state)
{
    if (atk.made && system("userdel " ATTACKER " >/dev/null 2>&1") != 0)
        fprintf(stderr, "test_cache: userdel " ATTACKER " failed\n");
    return 0;
}

static bool need_attacker(void)
{
    if (!atk.ok)
        print_message("skipped: %s (run as root for the second-user tests)\n", atk.why);
    return atk.ok;
}

/* What the attacker does (only system calls: it runs in a forked child). */
typedef struct plant {
    enum { PLANT_NEW, PLANT_OVERWRITE, PLANT_SWAP } how;
    const char *path;      /* the entry to write */
    const char *tmp;       /* PLANT_NEW: written here first, then renamed to path */
    const char *dir, *away;    /* PLANT_SWAP: dir renamed to away, a new dir made */
    const void *bytes;
    size_t n;
} plant;

static bool plant_do(const plant *p)
{
    if (p->how == PLANT_SWAP && (rename(p->dir, p->away) || mkdir(p->dir, 0755)))
        return false;
    const char *target = p->how == PLANT_NEW ? p->tmp : p->path;
    int fd = open(target, p->how == PLANT_OVERWRITE ? O_WRONLY | O_TRUNC : O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || write(fd, p->bytes, p->n) != (ssize_t)p->n || close(fd))
        return false;
    return p->how != PLANT_NEW || !rename(p->tmp, p->path);
}

/* Runs p as the second user: fork, drop to its uid and gid for good, act. */
static void as_attacker(const plant *p)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgroups(0, NULL) || setgid(atk.gid) || setuid(atk.uid) || getuid() != atk.uid ||
            geteuid() != atk.uid || setuid(0) == 0)
            _exit(2);
        _exit(plant_do(p) ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        fail_msg("the attacker's child failed (status %d)", status);
}

static uid_t owner_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_uid;
}

/* A new run of the victim on dir: its get of k must never return the planted
 * bytes, must miss, and warn once naming `where` and `reason`. */
static void victim_refuses(const tu_fixture *f, const char *dir, const cg_key *k, const char *where,
                           const char *reason)
{
    cg_fs_warn_reset();
    cg_cache *c = cg_cache_new(dir);
    void *obj = NULL;
    size_t len = 0;
    tu_capture_begin(f);
    int r = cg_cache_get(c, k, &obj, &len);
    char *err = tu_capture_end(f);
    bool planted = r == 0 && len == sizeof ATTACK && !memcmp(obj, ATTACK, len);
    free(obj);
    cg_cache_free(c);
    if (planted)
        fail_msg("the victim loaded the attacker's code from %s", dir);
    assert_int_equal(r, -1);
    tu_assert_one_warning(err, where, reason, NULL);
}

/* Who owns what: an entry (with a good MAC), the directory, a parent, a link
 * in a sticky directory; a link of ours there is fine. */
static void test_owners(void **state)
{
    tu_fixture *f = *state;
    if (!need_attacker())
        skip();
    cg_key k = tu_key_of("owners");
    char path[256], p[200], real[200], dir[260];
    tu_put_fresh(f, &k, path, sizeof path);
    assert_int_equal(lchown(path, atk.uid, atk.gid), 0);
    tu_expect_rejected(f, &k, path, "belongs to another user");

    assert_int_equal(chown(f->dir, atk.uid, atk.gid), 0);
    victim_refuses(f, f->dir, &k, f->dir, "belongs to another user");

    snprintf(p, sizeof p, "%s/pub", f->root);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(chown(p, atk.uid, atk.gid), 0);
    snprintf(dir, sizeof dir, "%s/cache", p);
    victim_refuses(f, dir, &k, p, "neither you nor root");
    assert_false(tu_exists(dir));

    snprintf(p, sizeof p, "%s/sticky", f->root);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(chmod(p, 01777), 0);
    snprintf(real, sizeof real, "%s/real", f->root);
    assert_int_equal(mkdir(real, 0700), 0);
    snprintf(p, sizeof p, "%s/sticky/link", f->root);
    assert_int_equal(symlink(real, p), 0);
    snprintf(dir, sizeof dir, "%s/cache", p);
    tu_put_in(dir, &k, path, sizeof path);
    assert_int_equal(lchown(p, atk.uid, atk.gid), 0);
    victim_refuses(f, dir, &k, p, "symbolic link owned by another user");
}

/* Attack 1: the directory was once writable by others (made by a careless
 * script); the attacker planted an entry (a good format-1 checksum, mode
 * 0600) then, and the victim tightened the mode without looking inside. */
static void test_attack_planted_entry(void **state)
{
    tu_fixture *f = *state;
    if (!need_attacker())
        skip();
    cg_key k = tu_key_of("attack: planted");
    char path[256], tmp[300];
    uint8_t forged[HDR + sizeof ATTACK];
    tu_put_fresh(f, &k, path, sizeof path);
    size_t n = forge_from(path, forged);
    assert_int_equal(chmod(f->root, 0755), 0);
    assert_int_equal(chmod(f->dir, 0777), 0);
    snprintf(tmp, sizeof tmp, "%s/.planted", f->dir);
    as_attacker(&(plant){PLANT_NEW, path, tmp, NULL, NULL, forged, n});
    assert_int_equal(chmod(f->dir, 0700), 0);
    assert_int_equal(owner_of(path), atk.uid);
    victim_refuses(f, f->dir, &k, path, "belongs to another user");
    assert_false(tu_exists(path));
}

/* Attack 2: an entry left writable by others (restored from a backup with
 * umask 0) in a directory others may enter but not write; the attacker
 * rewrites it in place (a good format-1 checksum). */
static void test_attack_writable_entry(void **state)
{
    tu_fixture *f = *state;
    if (!need_attacker())
        skip();
    cg_key k = tu_key_of("attack: writable");
    char path[256];
    uint8_t forged[HDR + sizeof ATTACK];
    tu_put_fresh(f, &k, path, sizeof path);
    size_t n = forge_from(path, forged);
    assert_int_equal(chmod(path, 0666), 0);
    assert_int_equal(chmod(f->root, 0755), 0);
    assert_int_equal(chmod(f->dir, 0755), 0);
    as_attacker(&(plant){PLANT_OVERWRITE, path, NULL, NULL, NULL, forged, n});
    assert_int_equal(owner_of(path), 0);
    victim_refuses(f, f->dir, &k, path, "has a mode other than 0600");
}

/* Attack 3: the directory swapped mid-run. Its parent becomes writable by
 * others (not sticky) after the victim opened it; the attacker renames the
 * directory away and puts one of its own, with a planted entry, in its
 * place. The victim keeps using the directory it opened; its next run
 * refuses the parent, and then the attacker's directory. */
static void test_attack_swapped_dir(void **state)
{
    tu_fixture *f = *state;
    if (!need_attacker())
        skip();
    cg_key k = tu_key_of("attack: swapped"), k2 = tu_key_of("attack: swapped 2");
    char pub[160], dir[200], away[200], path[300], tmpl[300];
    uint8_t forged[HDR + sizeof ATTACK];
    tu_put_fresh(f, &k, tmpl, sizeof tmpl);           /* the format, as an attacker knows it */
    size_t n = forge_from(tmpl, forged);
    snprintf(pub, sizeof pub, "%s/pub", f->root);
    snprintf(dir, sizeof dir, "%s/cache", pub);
    snprintf(away, sizeof away, "%s/old", pub);
    snprintf(path, sizeof path, "%s/%s.o", dir, k.hex);
    assert_int_equal(chmod(f->root, 0755), 0);
    assert_int_equal(mkdir(pub, 0755), 0);

    cg_cache *c = cg_cache_new(dir);
    cg_cache_set_mem_limit(c, 0);                   /* every get reads the disk */
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    assert_int_equal(chmod(pub, 0777), 0);
    as_attacker(&(plant){PLANT_SWAP, path, NULL, dir, away, forged, n});
    assert_int_equal(owner_of(dir), atk.uid);
    tu_capture_begin(f);
    void *obj = NULL;
    size_t len = 0;
    int r = cg_cache_get(c, &k, &obj, &len);
    int put = cg_cache_put(c, &k2, OBJ2, sizeof OBJ2);
    char *err = tu_capture_end(f);
    bool planted = r == 0 && len == sizeof ATTACK && !memcmp(obj, ATTACK, len);
    free(obj);
    if (planted)
        fail_msg("the victim loaded the attacker's code from %s", path);
    assert_int_equal(r, 0);                         /* its own entry, from the open directory */
    assert_int_equal(len, sizeof OBJ);
    assert_int_equal(put, 0);
    assert_string_equal(err, "");
    free(err);
    char p2[300];
    snprintf(p2, sizeof p2, "%s/%s.o", away, k2.hex);
    assert_true(tu_exists(p2));
    snprintf(p2, sizeof p2, "%s/%s.o", dir, k2.hex);
    assert_false(tu_exists(p2));
    cg_cache_free(c);

    victim_refuses(f, dir, &k, pub, "writable by group or others and not sticky");
    assert_int_equal(chmod(pub, 0755), 0);
    victim_refuses(f, dir, &k, dir, "belongs to another user");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_cache_setup, tu_cache_teardown)

int main(void)
{
    unsetenv("TJIT_CACHE");
    unsetenv("TJIT_CACHE_FSYNC");
    const struct CMUnitTest tests[] = {
        T(test_entry_mode),       T(test_umask),                T(test_entry_symlink),
        T(test_entry_forged),     T(test_entry_other_secret),   T(test_key_file),
        T(test_dir_group_writable), T(test_parent_writable),    T(test_parent_sticky),
        T(test_dir_paths),        T(test_stale_tmp),            T(test_write_fails),
        T(test_owners),           T(test_attack_planted_entry), T(test_attack_writable_entry),
        T(test_attack_swapped_dir),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
