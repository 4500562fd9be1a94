/* test_cache.c - the kernel cache (codegen/cache.c, cache_fs.c) and its
 * SHA-256 and HMAC: FIPS and RFC 4231 test vectors, key stability and
 * sensitivity, memory and disk round trips, a second cache on the same
 * directory (a new process), corrupt, truncated and misplaced files, unusable
 * directories, TJIT_CACHE=0, the LRU bound and concurrent use; then what
 * keeps another local user's code out: entries' mode, links, owner and MAC,
 * the key file, the directory and its parents, stale temp files, and three
 * attacks run as a second user (made with useradd when we are root; skipped
 * otherwise). Each test gets a fresh mkdtemp directory, removed after. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../codegen/cache.h"
#include "../codegen/cache_fs.h"
#include "../codegen/hmac.h"
#include "../codegen/jit.h"
#include "../codegen/sha256.h"
#include "util.h"

#define HDR 120     /* the disk header's size (cache.c) */
#define MAC_AT 88   /* where its MAC starts: it covers bytes [0, MAC_AT) and the payload */

typedef struct fixture {
    char root[64];     /* the temp directory */
    char dir[128];     /* root/cache: the cache directory of most tests */
} fixture;

static int saved_stderr = -1;   /* while stderr is captured */

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
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
static void rm_tree(const char *path)
{
    chmod(path, 0700);
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (saved_stderr >= 0) {          /* a failed assertion inside a capture */
        dup2(saved_stderr, 2);
        close(saved_stderr);
        saved_stderr = -1;
    }
    rm_tree(f->root);
    free(f);
    return tu_scope_teardown(NULL);
}

/* ---- helpers --------------------------------------------------------------------- */

static cg_key key_of(const char *ir)
{
    cg_key k;
    cg_key_make(ir, strlen(ir), &k);
    return k;
}

static char *path_of(const fixture *f, const cg_key *k, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s.o", f->dir, k->hex);
    return buf;
}

static int count_files(const char *dir)
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

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void assert_hit(cg_cache *c, const cg_key *k, const void *want, size_t n)
{
    void *obj = (void *)1;
    size_t len = 1;
    assert_int_equal(cg_cache_get(c, k, &obj, &len), 0);
    assert_int_equal(len, n);
    assert_memory_equal(obj, want, n);
    free(obj);
}

static void assert_miss(cg_cache *c, const cg_key *k)
{
    void *obj = (void *)1;
    size_t len = 1;
    assert_int_equal(cg_cache_get(c, k, &obj, &len), -1);
    assert_null(obj);
    assert_int_equal(len, 0);
}

static cg_cache_stats stats(cg_cache *c)
{
    cg_cache_stats s;
    cg_cache_stats_get(c, &s);
    return s;
}

/* Overwrites one byte of a file at offset off with its complement. */
static void flip_byte(const char *path, long off)
{
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, off, SEEK_SET), 0);
    int ch = fgetc(fp);
    assert_true(ch != EOF);
    assert_int_equal(fseek(fp, off, SEEK_SET), 0);
    fputc(~ch & 0xff, fp);
    assert_int_equal(fclose(fp), 0);
}

static void write_file(const char *path, const void *bytes, size_t n, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    assert_int_equal(close(fd), 0);
    assert_int_equal(chmod(path, mode), 0);
}

/* The whole file (malloc'd), its size in *n. */
static uint8_t *read_file(const char *path, size_t *n)
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

/* Sends stderr to a file until capture_end, which returns what was written
 * (malloc'd). The teardown restores stderr if an assertion fails between. */
static void capture_begin(const fixture *f)
{
    char path[160];
    snprintf(path, sizeof path, "%s/stderr.txt", f->root);
    fflush(stderr);
    saved_stderr = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved_stderr >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
}

static char *capture_end(const fixture *f)
{
    char path[160];
    snprintf(path, sizeof path, "%s/stderr.txt", f->root);
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    saved_stderr = -1;
    size_t n;
    char *text = (char *)read_file(path, &n);
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
static void assert_one_warning(char *text, ...)
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

static const char OBJ[] = "\x7f" "ELF pretend object code \x00\x01\x02 with bytes";
static const char OBJ2[] = "a different object, somewhat longer than the first one";
/* What an attacker would like us to run. */
static const char ATTACK[] = "\x7f" "ELF planted code: would run as the victim";

/* ---- SHA-256 ------------------------------------------------------------------- */

static void expect_sha(const void *data, size_t len, const char *want)
{
    uint8_t d[32];
    char hex[65];
    cg_sha256(data, len, d);
    cg_sha256_hex(d, hex);
    assert_string_equal(hex, want);
}

/* FIPS 180-2 appendix B (B.1, B.2, B.3) and the empty message. */
static void test_sha256_vectors(void **state)
{
    expect_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *b2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    expect_sha(b2, strlen(b2), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* B.3: a million 'a', fed in uneven pieces through the incremental calls. */
    char chunk[997];
    memset(chunk, 'a', sizeof chunk);
    cg_sha256_ctx s;
    cg_sha256_init(&s);
    size_t left = 1000000;
    for (size_t piece = 1; left; piece = piece % 900 + 13) {
        size_t n = piece < left ? piece : left;
        cg_sha256_update(&s, chunk, n);
        left -= n;
    }
    uint8_t d[32];
    char hex[65];
    cg_sha256_final(&s, d);
    cg_sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Every length around the padding boundaries, split at every point, gives the
 * one-shot digest. */
static void test_sha256_splits(void **state)
{
    uint8_t msg[160], whole[32], parts[32];
    for (size_t k = 0; k < sizeof msg; k++)
        msg[k] = (uint8_t)(k * 37 + 11);
    for (size_t len = 0; len <= sizeof msg; len++) {
        cg_sha256(msg, len, whole);
        for (size_t cut = 0; cut <= len; cut += 7) {
            cg_sha256_ctx s;
            cg_sha256_init(&s);
            cg_sha256_update(&s, msg, cut);
            cg_sha256_update(&s, msg + cut, len - cut);
            cg_sha256_final(&s, parts);
            assert_memory_equal(whole, parts, 32);
        }
    }
}

/* ---- HMAC-SHA256 ---------------------------------------------------------------- */

static void expect_hmac(const void *key, size_t kn, const void *data, size_t dn, const char *want)
{
    uint8_t d[32];
    char hex[65];
    cg_hmac_sha256(key, kn, data, dn, d);
    cg_sha256_hex(d, hex);
    if (strncmp(hex, want, strlen(want)))
        fail_msg("HMAC %s, want %s", hex, want);
}

/* RFC 4231 section 4, test cases 1 to 7 (case 5 gives the first 128 bits). */
static void test_hmac_rfc4231(void **state)
{
    uint8_t k[131], d[50];
    memset(k, 0x0b, 20);
    expect_hmac(k, 20, "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    expect_hmac("Jefe", 4, "what do ya want for nothing?", 28,
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k, 0xaa, 20);
    memset(d, 0xdd, 50);
    expect_hmac(k, 20, d, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    for (int i = 0; i < 25; i++)
        k[i] = (uint8_t)(i + 1);
    memset(d, 0xcd, 50);
    expect_hmac(k, 25, d, 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    memset(k, 0x0c, 20);
    expect_hmac(k, 20, "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b");
    memset(k, 0xaa, 131);
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    expect_hmac(k, 131, m6, strlen(m6), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    const char *m7 = "This is a test using a larger than block-size key and a larger than block-size data. "
                     "The key needs to be hashed before being used by the HMAC algorithm.";
    expect_hmac(k, 131, m7, strlen(m7), "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

/* The incremental calls give the one-shot MAC at every split; a key longer
 * than a block acts as its SHA-256, one of exactly a block does not; equality
 * sees a difference in any byte. */
static void test_hmac_splits_and_equal(void **state)
{
    uint8_t key[65], msg[150], whole[32], parts[32], hashed[32], other[32];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(i * 7 + 3);
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 37 + 11);
    static const size_t keylens[] = {0, 1, 32, 63, 64, 65};
    for (size_t j = 0; j < sizeof keylens / sizeof *keylens; j++) {
        cg_hmac_sha256(key, keylens[j], msg, sizeof msg, whole);
        for (size_t cut = 0; cut <= sizeof msg; cut += 5) {
            cg_hmac_ctx h;
            cg_hmac_init(&h, key, keylens[j]);
            cg_hmac_update(&h, msg, cut);
            cg_hmac_update(&h, msg + cut, sizeof msg - cut);
            cg_hmac_final(&h, parts);
            assert_true(cg_hmac_equal(whole, parts));
        }
        cg_sha256(key, keylens[j], hashed);
        cg_hmac_sha256(hashed, 32, msg, sizeof msg, other);
        assert_int_equal(cg_hmac_equal(whole, other), keylens[j] > 64);
    }
    for (int i = 0; i < 32; i++) {
        memcpy(other, whole, 32);
        other[i] ^= 0x10;
        assert_false(cg_hmac_equal(whole, other));
    }
}

/* ---- keys ---------------------------------------------------------------------- */

static void test_key_stable(void **state)
{
    const char *ir = "graph(%a: f32[4]) { %b = exp(%a) return %b }";
    cg_key k1 = key_of(ir), k2 = key_of(ir), k3;
    assert_string_equal(k1.hex, k2.hex);
    assert_int_equal(strlen(k1.hex), 64);
    assert_int_equal(strspn(k1.hex, "0123456789abcdef"), 64);
    cg_key_make_env(ir, strlen(ir), cg_key_env_host(), &k3);
    assert_string_equal(k1.hex, k3.hex);
    const cg_key_env *h = cg_key_env_host();
    assert_true(h->cpu[0] && h->llvm_version[0]);
    assert_non_null(strstr(h->llvm_version, "19."));
    assert_int_equal(h->codegen_version, CG_CODEGEN_VERSION);
}

static void test_key_sensitive(void **state)
{
    const char *ir = "graph(%a: f32[4]) { %b = exp(%a) return %b }";
    size_t n = strlen(ir);
    cg_key base = key_of(ir), k;
    cg_key_make(ir, n - 1, &k);                    /* a prefix of the text */
    assert_string_not_equal(base.hex, k.hex);
    k = key_of("graph(%a: f32[5]) { %b = exp(%a) return %b }");
    assert_string_not_equal(base.hex, k.hex);
    k = key_of("");
    assert_string_not_equal(base.hex, k.hex);

    cg_key_env e = *cg_key_env_host();
    e.codegen_version = CG_CODEGEN_VERSION + 1;
    cg_key_make_env(ir, n, &e, &k);
    assert_string_not_equal(base.hex, k.hex);
    e = *cg_key_env_host();
    e.cpu = "znver5";
    cg_key_make_env(ir, n, &e, &k);
    assert_string_not_equal(base.hex, k.hex);
    e = *cg_key_env_host();
    e.features = "+avx2,-avx512f";
    cg_key_make_env(ir, n, &e, &k);
    assert_string_not_equal(base.hex, k.hex);
    e = *cg_key_env_host();
    e.llvm_version = "20.1.0";
    cg_key_make_env(ir, n, &e, &k);
    assert_string_not_equal(base.hex, k.hex);
    /* Fields are length-prefixed: moving a character across a boundary counts. */
    cg_key a, b;
    cg_key_env e1 = {"ab", "c", "19", 1}, e2 = {"a", "bc", "19", 1};
    cg_key_make_env("x", 1, &e1, &a);
    cg_key_make_env("x", 1, &e2, &b);
    assert_string_not_equal(a.hex, b.hex);
}

/* ---- memory and disk round trips -------------------------------------------------- */

static void test_memory_round_trip(void **state)
{
    cg_cache *c = cg_cache_new(NULL);
    assert_non_null(c);
    cg_key k = key_of("memory");
    assert_miss(c, &k);
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    assert_hit(c, &k, OBJ, sizeof OBJ);
    /* The caller's copy is its own. */
    void *obj;
    size_t len;
    assert_int_equal(cg_cache_get(c, &k, &obj, &len), 0);
    memset(obj, 0, len);
    free(obj);
    assert_hit(c, &k, OBJ, sizeof OBJ);
    /* A second put replaces the bytes. */
    assert_int_equal(cg_cache_put(c, &k, OBJ2, sizeof OBJ2), 0);
    assert_hit(c, &k, OBJ2, sizeof OBJ2);
    cg_cache_stats s = stats(c);
    assert_int_equal(s.mem_hits, 4);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.disk_hits, 0);
    assert_int_equal(s.writes, 0);
    assert_int_equal(s.mem_bytes, sizeof OBJ2);
    assert_null(cg_cache_dir(c));
    cg_cache_free(c);
}

static void test_disk_round_trip(void **state)
{
    fixture *f = *state;
    cg_cache *a = cg_cache_new(f->dir);
    cg_key k = key_of("disk");
    assert_miss(a, &k);
    assert_false(exists(f->dir));                  /* a get does not create it */
    assert_int_equal(cg_cache_put(a, &k, OBJ, sizeof OBJ), 0);
    assert_string_equal(cg_cache_dir(a), f->dir);
    char path[256];
    struct stat st;
    assert_int_equal(stat(path_of(f, &k, path, sizeof path), &st), 0);
    assert_int_equal(st.st_size, HDR + sizeof OBJ);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(count_files(f->dir), 2);      /* the entry and the key, no temp file */
    char key[256];
    snprintf(key, sizeof key, "%s/%s", f->dir, CG_KEY_FILE);
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_size, CG_KEY_BYTES);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, geteuid());
    assert_int_equal(stats(a).writes, HDR + sizeof OBJ);
    assert_hit(a, &k, OBJ, sizeof OBJ);
    assert_int_equal(stats(a).mem_hits, 1);
    cg_cache_free(a);

    /* A new cache on the directory: a new process. */
    cg_cache *b = cg_cache_new(f->dir);
    assert_hit(b, &k, OBJ, sizeof OBJ);
    assert_hit(b, &k, OBJ, sizeof OBJ);
    cg_cache_stats s = stats(b);
    assert_int_equal(s.disk_hits, 1);
    assert_int_equal(s.mem_hits, 1);
    assert_int_equal(s.misses, 0);
    assert_int_equal(s.corrupt, 0);
    /* A put over the entry replaces the file. */
    assert_int_equal(cg_cache_put(b, &k, OBJ2, sizeof OBJ2), 0);
    cg_cache_free(b);
    cg_cache *c = cg_cache_new(f->dir);
    assert_hit(c, &k, OBJ2, sizeof OBJ2);
    cg_cache_free(c);
}

static void test_fsync_option(void **state)
{
    fixture *f = *state;
    setenv("TJIT_CACHE_FSYNC", "1", 1);
    cg_cache *c = cg_cache_new(f->dir);
    unsetenv("TJIT_CACHE_FSYNC");
    cg_key k = key_of("fsync");
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    cg_cache_free(c);
    c = cg_cache_new(f->dir);
    assert_hit(c, &k, OBJ, sizeof OBJ);
    assert_int_equal(stats(c).disk_hits, 1);
    cg_cache_free(c);
}

static void test_dir_created_with_parents(void **state)
{
    fixture *f = *state;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/a/b/c/", f->root);
    cg_cache *c = cg_cache_new(dir);
    cg_key k = key_of("parents");
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    struct stat st;
    snprintf(dir, sizeof dir, "%s/a/b/c", f->root);
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    snprintf(dir, sizeof dir, "%s/a", f->root);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(count_files(dir), 1);
    cg_cache_free(c);
}

/* The directory removed while the cache runs: the next put makes it again. */
static void test_dir_removed_then_put(void **state)
{
    fixture *f = *state;
    cg_cache *c = cg_cache_new(f->dir);
    cg_key k1 = key_of("one"), k2 = key_of("two");
    char path[256];
    assert_int_equal(cg_cache_put(c, &k1, OBJ, sizeof OBJ), 0);
    rm_tree(f->dir);
    assert_int_equal(cg_cache_put(c, &k2, OBJ2, sizeof OBJ2), 0);
    assert_true(exists(path_of(f, &k2, path, sizeof path)));
    assert_string_equal(cg_cache_dir(c), f->dir);
    cg_cache_free(c);
    /* A new directory has a new key, and the entry was written under it. */
    c = cg_cache_new(f->dir);
    cg_cache_set_mem_limit(c, 0);
    assert_hit(c, &k2, OBJ2, sizeof OBJ2);
    assert_miss(c, &k1);
    /* Removed while open, then a get: a miss (nothing is created) until a put. */
    rm_tree(f->dir);
    assert_miss(c, &k2);
    assert_false(exists(f->dir));
    assert_int_equal(cg_cache_put(c, &k1, OBJ, sizeof OBJ), 0);
    assert_hit(c, &k1, OBJ, sizeof OBJ);
    assert_int_equal(stats(c).corrupt, 0);
    cg_cache_free(c);
}

/* ---- bad files --------------------------------------------------------------------- */

/* Writes OBJ under key k with a fresh cache on dir; returns the file's path in buf. */
static char *put_in(const char *dir, const cg_key *k, char *buf, size_t n)
{
    cg_cache *c = cg_cache_new(dir);
    assert_int_equal(cg_cache_put(c, k, OBJ, sizeof OBJ), 0);
    assert_string_equal(cg_cache_dir(c), dir);
    cg_cache_free(c);
    int w = snprintf(buf, n, "%s/%s.o", dir, k->hex);
    assert_true(w > 0 && (size_t)w < n);
    return buf;
}

static char *put_fresh(const fixture *f, const cg_key *k, char *buf, size_t n)
{
    return put_in(f->dir, k, buf, n);
}

#define CORRUPT "is truncated or corrupt"
#define BAD_MAC "fails authentication"

/* A fresh cache (a new process) on dir finds k's entry at path bad: a miss,
 * counted, one warning naming the file and the reason, the file removed; a
 * put then replaces it. */
static void expect_rejected_in(const fixture *f, const char *dir, const cg_key *k, const char *path,
                               const char *reason)
{
    cg_fs_warn_reset();
    cg_cache *c = cg_cache_new(dir);
    capture_begin(f);
    assert_miss(c, k);
    assert_one_warning(capture_end(f), path, reason, "not loaded", NULL);
    cg_cache_stats s = stats(c);
    assert_int_equal(s.corrupt, 1);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.disk_hits, 0);
    assert_false(exists(path));
    assert_int_equal(cg_cache_put(c, k, OBJ, sizeof OBJ), 0);
    cg_cache_free(c);
    c = cg_cache_new(dir);
    assert_hit(c, k, OBJ, sizeof OBJ);
    assert_int_equal(stats(c).corrupt, 0);
    cg_cache_free(c);
}

static void expect_rejected(const fixture *f, const cg_key *k, const char *path, const char *reason)
{
    expect_rejected_in(f, f->dir, k, path, reason);
}

static void test_corrupt_payload(void **state)
{
    fixture *f = *state;
    cg_key k = key_of("corrupt payload");
    char path[256];
    put_fresh(f, &k, path, sizeof path);
    flip_byte(path, HDR + 5);
    expect_rejected(f, &k, path, BAD_MAC);
    flip_byte(path, HDR + sizeof OBJ - 1);         /* the last byte */
    expect_rejected(f, &k, path, BAD_MAC);
}

/* Each field of the header: magic, format, header size, key, length, MAC. */
static void test_corrupt_header(void **state)
{
    fixture *f = *state;
    static const struct { long off; const char *reason; } cases[] = {
        {0, CORRUPT},  {7, CORRUPT},  {8, CORRUPT},  {12, CORRUPT},  {16, CORRUPT},
        {79, CORRUPT}, {80, CORRUPT}, {87, CORRUPT}, {88, BAD_MAC}, {119, BAD_MAC},
    };
    cg_key k = key_of("corrupt header");
    char path[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        put_fresh(f, &k, path, sizeof path);
        flip_byte(path, cases[i].off);
        expect_rejected(f, &k, path, cases[i].reason);
    }
}

static void test_truncated(void **state)
{
    fixture *f = *state;
    static const off_t sizes[] = {HDR + sizeof OBJ - 1, HDR + 1, HDR, HDR - 1, 10, 0};
    cg_key k = key_of("truncated");
    char path[256];
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        put_fresh(f, &k, path, sizeof path);
        assert_int_equal(truncate(path, sizes[i]), 0);
        expect_rejected(f, &k, path, CORRUPT);
    }
    /* Bytes appended after the payload are just as bad. */
    put_fresh(f, &k, path, sizeof path);
    FILE *fp = fopen(path, "ab");
    fputs("junk", fp);
    fclose(fp);
    expect_rejected(f, &k, path, CORRUPT);
}

/* A file renamed onto another key's name: its header names the wrong key. */
static void test_other_key(void **state)
{
    fixture *f = *state;
    cg_key k1 = key_of("first kernel"), k2 = key_of("second kernel");
    char p1[256], p2[256];
    put_fresh(f, &k1, p1, sizeof p1);
    put_fresh(f, &k2, p2, sizeof p2);
    assert_int_equal(rename(p1, p2), 0);
    cg_cache *c = cg_cache_new(f->dir);
    capture_begin(f);
    assert_miss(c, &k2);
    assert_one_warning(capture_end(f), p2, CORRUPT, NULL);
    assert_miss(c, &k1);                           /* gone: a plain miss */
    cg_cache_stats s = stats(c);
    assert_int_equal(s.corrupt, 1);
    assert_int_equal(s.misses, 2);
    assert_false(exists(p2));
    cg_cache_free(c);
    /* An entry for another CPU is another key: written under its own name. */
    cg_key_env e = *cg_key_env_host();
    e.cpu = "some-other-cpu";
    cg_key k3;
    cg_key_make_env("first kernel", 12, &e, &k3);
    assert_string_not_equal(k3.hex, k1.hex);
}

/* ---- unusable directories and TJIT_CACHE=0 ----------------------------------------- */

static void put_twice_and_get(cg_cache *c)
{
    cg_key k1 = key_of("k1"), k2 = key_of("k2");
    assert_int_equal(cg_cache_put(c, &k1, OBJ, sizeof OBJ), 0);
    assert_int_equal(cg_cache_put(c, &k2, OBJ2, sizeof OBJ2), 0);
    assert_hit(c, &k1, OBJ, sizeof OBJ);
    assert_hit(c, &k2, OBJ2, sizeof OBJ2);
    assert_miss(c, &(cg_key){0});                  /* an empty key: never on disk */
}

/* A directory that can never be made (under a regular file): works as root too. */
static void test_unwritable_dir(void **state)
{
    fixture *f = *state;
    char file[160], dir[200];
    snprintf(file, sizeof file, "%s/file.txt", f->root);
    FILE *fp = fopen(file, "w");
    fclose(fp);
    snprintf(dir, sizeof dir, "%s/sub", file);
    cg_cache *c = cg_cache_new(dir);
    capture_begin(f);
    put_twice_and_get(c);
    assert_one_warning(capture_end(f), dir, "cannot be created", "Not a directory", "memory only", NULL);
    assert_null(cg_cache_dir(c));
    assert_int_equal(stats(c).writes, 0);
    /* Still quiet afterwards. */
    capture_begin(f);
    put_twice_and_get(c);
    char *err = capture_end(f);
    assert_string_equal(err, "");
    free(err);
    cg_cache_free(c);
    /* A get (which creates nothing) names the file in the way. */
    cg_fs_warn_reset();
    c = cg_cache_new(dir);
    capture_begin(f);
    assert_miss(c, &(cg_key){"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"});
    assert_one_warning(capture_end(f), dir, "is not a directory", NULL);
    cg_cache_free(c);
}

/* A directory others can write is refused (their object code would run as ours). */
static void test_insecure_dir(void **state)
{
    fixture *f = *state;
    assert_int_equal(mkdir(f->dir, 0700), 0);
    assert_int_equal(chmod(f->dir, 0777), 0);
    cg_cache *c = cg_cache_new(f->dir);
    capture_begin(f);
    put_twice_and_get(c);
    assert_one_warning(capture_end(f), f->dir, "writable by group or others", NULL);
    assert_int_equal(count_files(f->dir), 0);
    cg_cache_free(c);
}

static void test_cache_env_off(void **state)
{
    fixture *f = *state;
    setenv("TJIT_CACHE", "0", 1);
    cg_cache *c = cg_cache_new(f->dir);
    capture_begin(f);
    put_twice_and_get(c);
    char *err = capture_end(f);
    assert_string_equal(err, "");
    free(err);
    assert_false(exists(f->dir));
    assert_null(cg_cache_dir(c));
    cg_cache_free(c);

    /* The process-wide cache, made now, honours it too. */
    char gdir[200];
    snprintf(gdir, sizeof gdir, "%s/global", f->root);
    setenv("TJIT_CACHE_DIR", gdir, 1);
    cg_cache *g = cg_cache_global();
    assert_non_null(g);
    assert_ptr_equal(g, cg_cache_global());
    cg_key k = key_of("global");
    assert_int_equal(cg_cache_put(g, &k, OBJ, sizeof OBJ), 0);
    assert_hit(g, &k, OBJ, sizeof OBJ);
    assert_false(exists(gdir));
    assert_null(cg_cache_dir(g));
    unsetenv("TJIT_CACHE");
    unsetenv("TJIT_CACHE_DIR");

    /* Any other value keeps the disk layer. */
    setenv("TJIT_CACHE", "1", 1);
    c = cg_cache_new(f->dir);
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    assert_int_equal(count_files(f->dir), 2);      /* the entry and the key */
    cg_cache_free(c);
    unsetenv("TJIT_CACHE");
}

static void test_bad_args(void **state)
{
    fixture *f = *state;
    cg_cache *c = cg_cache_new(f->dir);
    cg_key k = key_of("args"), bad;
    void *obj;
    size_t len;
    assert_int_equal(cg_cache_put(NULL, &k, OBJ, sizeof OBJ), -1);
    assert_int_equal(cg_cache_put(c, NULL, OBJ, sizeof OBJ), -1);
    assert_int_equal(cg_cache_put(c, &k, NULL, 4), -1);
    assert_int_equal(cg_cache_put(c, &k, OBJ, 0), -1);
    memset(bad.hex, 0, sizeof bad.hex);
    strcpy(bad.hex, "../../../../../../../../../../../../../../../../../../etc/passwd");
    assert_int_equal(cg_cache_put(c, &bad, OBJ, sizeof OBJ), -1);
    bad = k;
    bad.hex[3] = 'A';                             /* upper case is not a key */
    assert_int_equal(cg_cache_put(c, &bad, OBJ, sizeof OBJ), -1);
    assert_int_equal(cg_cache_get(NULL, &k, &obj, &len), -1);
    assert_int_equal(cg_cache_get(c, NULL, &obj, &len), -1);
    assert_null(obj);
    assert_int_equal(cg_cache_get(c, &k, NULL, &len), -1);
    assert_int_equal(count_files(f->root), 0);
    cg_cache_stats s;
    cg_cache_stats_get(NULL, &s);
    assert_int_equal(s.misses, 0);
    assert_null(cg_cache_dir(NULL));
    cg_cache_free(NULL);
    cg_cache_free(c);
}

/* ---- the memory bound ---------------------------------------------------------------- */

static void test_lru_bound(void **state)
{
    cg_cache *c = cg_cache_new(NULL);
    static char a[1000], b[1000], d[1000], big[5000];
    memset(a, 'a', sizeof a);
    memset(b, 'b', sizeof b);
    memset(d, 'd', sizeof d);
    cg_key ka = key_of("a"), kb = key_of("b"), kd = key_of("d"), kbig = key_of("big");
    cg_cache_set_mem_limit(c, 2500);
    assert_int_equal(cg_cache_put(c, &ka, a, sizeof a), 0);
    assert_int_equal(cg_cache_put(c, &kb, b, sizeof b), 0);
    assert_hit(c, &ka, a, sizeof a);               /* a is now the most recent */
    assert_int_equal(cg_cache_put(c, &kd, d, sizeof d), 0);
    assert_miss(c, &kb);                           /* b was least recent */
    assert_hit(c, &ka, a, sizeof a);
    assert_hit(c, &kd, d, sizeof d);
    cg_cache_stats s = stats(c);
    assert_int_equal(s.evictions, 1);
    assert_int_equal(s.mem_bytes, 2000);
    /* Larger than the bound and no disk: stored nowhere. */
    assert_int_equal(cg_cache_put(c, &kbig, big, sizeof big), -1);
    assert_miss(c, &kbig);
    assert_int_equal(stats(c).mem_bytes, 2000);
    /* Lowering the bound evicts at once. */
    cg_cache_set_mem_limit(c, 1500);
    assert_int_equal(stats(c).mem_bytes, 1000);
    assert_hit(c, &kd, d, sizeof d);
    cg_cache_set_mem_limit(c, 0);
    assert_int_equal(stats(c).mem_bytes, 0);
    assert_miss(c, &kd);
    cg_cache_free(c);
}

/* With a disk layer an entry evicted from memory is read back from disk. */
static void test_lru_then_disk(void **state)
{
    fixture *f = *state;
    cg_cache *c = cg_cache_new(f->dir);
    cg_cache_set_mem_limit(c, sizeof OBJ);
    cg_key k1 = key_of("evicted"), k2 = key_of("kept");
    assert_int_equal(cg_cache_put(c, &k1, OBJ, sizeof OBJ), 0);
    assert_int_equal(cg_cache_put(c, &k2, OBJ, sizeof OBJ), 0);
    assert_hit(c, &k1, OBJ, sizeof OBJ);
    assert_int_equal(stats(c).disk_hits, 1);
    assert_hit(c, &k1, OBJ, sizeof OBJ);
    assert_int_equal(stats(c).mem_hits, 1);
    cg_cache_free(c);
}

/* ---- threads ---------------------------------------------------------------------------- */

#define NKEYS 24
#define ITERS 400

typedef struct worker {
    cg_cache *c;
    int seed;
    int bad;                  /* wrong bytes returned */
    int hits;
} worker;

static size_t payload(int key, char *buf)
{
    size_t n = 100 + (size_t)key * 37;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(key * 31 + (int)i);
    return n;
}

static void *work(void *arg)
{
    worker *w = arg;
    unsigned r = (unsigned)w->seed;
    char want[2000];
    for (int it = 0; it < ITERS; it++) {
        r = r * 1103515245u + 12345u;
        int key = (int)(r >> 16) % NKEYS;
        char name[32];
        snprintf(name, sizeof name, "kernel %d", key);
        cg_key k = key_of(name);
        size_t n = payload(key, want);
        void *obj;
        size_t len;
        if (cg_cache_get(w->c, &k, &obj, &len) == 0) {
            w->hits++;
            w->bad += len != n || memcmp(obj, want, n);
            free(obj);
        } else if (cg_cache_put(w->c, &k, want, n)) {
            w->bad++;
        }
    }
    return NULL;
}

/* Two threads on one cache (small memory bound: evictions and disk reads), then
 * two threads each with its own cache on one directory (two processes). */
static void test_concurrent(void **state)
{
    fixture *f = *state;
    cg_cache *shared = cg_cache_new(f->dir);
    cg_cache_set_mem_limit(shared, 3000);
    cg_cache *own[2] = {cg_cache_new(f->dir), cg_cache_new(f->dir)};
    for (int round = 0; round < 2; round++) {
        worker w[2] = {{round ? own[0] : shared, 1, 0, 0}, {round ? own[1] : shared, 2, 0, 0}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        assert_int_equal(w[0].bad + w[1].bad, 0);
        assert_true(w[0].hits + w[1].hits > ITERS);
    }
    cg_cache *all[3] = {shared, own[0], own[1]};
    for (int i = 0; i < 3; i++) {
        cg_cache_stats s = stats(all[i]);
        assert_int_equal(s.corrupt, 0);
        assert_true(s.mem_hits + s.disk_hits > 0);
        cg_cache_free(all[i]);
    }
    assert_int_equal(count_files(f->dir), NKEYS + 1);  /* every key and secret.key, no temp files */
}

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
    uint8_t *tmpl = read_file(path, &n);
    assert_true(n >= HDR);
    size_t len = forge(tmpl, ATTACK, sizeof ATTACK, NULL, out);
    free(tmpl);
    return len;
}

/* An entry not exactly 0600 is refused before it is read, though its MAC is
 * good: others may have written it. Two such entries: one warning. */
static void test_entry_mode(void **state)
{
    fixture *f = *state;
    static const mode_t modes[] = {0644, 0666, 0604, 0620, 0400, 0700, 02600};
    cg_key k = key_of("mode"), k2 = key_of("mode 2");
    char path[256], path2[256];
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        put_fresh(f, &k, path, sizeof path);
        assert_int_equal(chmod(path, modes[i]), 0);
        expect_rejected(f, &k, path, "has a mode other than 0600");
    }
    put_fresh(f, &k, path, sizeof path);
    put_fresh(f, &k2, path2, sizeof path2);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(chmod(path2, 0666), 0);
    cg_fs_warn_reset();
    cg_cache *c = cg_cache_new(f->dir);
    capture_begin(f);
    assert_miss(c, &k);
    assert_miss(c, &k2);
    assert_one_warning(capture_end(f), path, "has a mode other than 0600", NULL);
    assert_int_equal(stats(c).corrupt, 2);
    cg_cache_free(c);
}

/* Whatever the umask, entries and the key are written 0600 (a umask that took
 * the write bit would otherwise make every entry refused). */
static void test_umask(void **state)
{
    fixture *f = *state;
    assert_int_equal(mkdir(f->dir, 0700), 0);
    mode_t old = umask(0266);
    cg_key k = key_of("umask");
    char path[256], key[256];
    put_fresh(f, &k, path, sizeof path);
    umask(old);
    struct stat st;
    snprintf(key, sizeof key, "%s/%s", f->dir, CG_KEY_FILE);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    cg_cache *c = cg_cache_new(f->dir);
    assert_hit(c, &k, OBJ, sizeof OBJ);
    cg_cache_free(c);
}

/* An entry that is a symbolic link is not followed (though its target is a
 * good entry), and the target is left alone; a FIFO does not hang a get. */
static void test_entry_symlink(void **state)
{
    fixture *f = *state;
    cg_key k = key_of("link");
    char path[256], real[160];
    put_fresh(f, &k, path, sizeof path);
    snprintf(real, sizeof real, "%s/elsewhere.o", f->root);
    assert_int_equal(rename(path, real), 0);
    assert_int_equal(symlink(real, path), 0);
    expect_rejected(f, &k, path, "is a symbolic link");
    assert_true(exists(real));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink("/nonexistent/dangling.o", path), 0);
    expect_rejected(f, &k, path, "is a symbolic link");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    expect_rejected(f, &k, path, "is not a regular file");
}

/* A forger who rewrites payload and header with a good plain checksum (what
 * format 1 checked, or a SHA-256 of header and payload) is refused; with the
 * key file in hand the same forgery loads, so the key is what refused it. */
static void test_entry_forged(void **state)
{
    fixture *f = *state;
    cg_key k = key_of("forged");
    char path[256], keyfile[256];
    uint8_t forged[HDR + sizeof ATTACK];
    put_fresh(f, &k, path, sizeof path);
    size_t n = forge_from(path, forged);
    write_file(path, forged, n, 0600);
    expect_rejected(f, &k, path, BAD_MAC);
    cg_sha256_ctx s;
    cg_sha256_init(&s);
    cg_sha256_update(&s, forged, MAC_AT);
    cg_sha256_update(&s, ATTACK, sizeof ATTACK);
    cg_sha256_final(&s, forged + MAC_AT);
    write_file(path, forged, n, 0600);
    expect_rejected(f, &k, path, BAD_MAC);
    /* The positive control. */
    snprintf(keyfile, sizeof keyfile, "%s/%s", f->dir, CG_KEY_FILE);
    size_t kn;
    uint8_t *key = read_file(keyfile, &kn);
    assert_int_equal(kn, CG_KEY_BYTES);
    forge(forged, ATTACK, sizeof ATTACK, key, forged);
    free(key);
    write_file(path, forged, n, 0600);
    cg_cache *c = cg_cache_new(f->dir);
    assert_hit(c, &k, ATTACK, sizeof ATTACK);
    cg_cache_free(c);
}

/* An entry made under another directory's key is refused, and so is every
 * old entry once the key file is replaced. */
static void test_entry_other_secret(void **state)
{
    fixture *f = *state;
    cg_key k = key_of("other secret"), k2 = key_of("other secret 2");
    char path[256], dir2[160], path2[256], keyfile[256];
    put_fresh(f, &k, path, sizeof path);
    snprintf(dir2, sizeof dir2, "%s/cache2", f->root);
    put_in(dir2, &k2, path2, sizeof path2);         /* dir2 and its own key */
    snprintf(path2, sizeof path2, "%s/%s.o", dir2, k.hex);
    size_t n;
    uint8_t *bytes = read_file(path, &n);
    write_file(path2, bytes, n, 0600);
    free(bytes);
    expect_rejected_in(f, dir2, &k, path2, BAD_MAC);
    snprintf(keyfile, sizeof keyfile, "%s/%s", f->dir, CG_KEY_FILE);
    assert_int_equal(unlink(keyfile), 0);
    put_fresh(f, &k2, path2, sizeof path2);           /* makes a new key */
    expect_rejected(f, &k, path, BAD_MAC);
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
    fixture *f = *state;
    static const struct { void (*spoil)(const char *); const char *reason; } cases[] = {
        {key_chmod, "has a mode other than 0600"}, {key_short, "has the wrong size"},
        {key_long, "has the wrong size"},          {key_dir, "is not a regular file"},
        {key_link, "is a symbolic link"},          {key_chown, "belongs to another user"},
    };
    char keyfile[256], path[256];
    snprintf(keyfile, sizeof keyfile, "%s/%s", f->dir, CG_KEY_FILE);
    cg_key k = key_of("key file");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].spoil == key_chown && geteuid() != 0)
            continue;                               /* chown needs root */
        rm_tree(f->dir);
        put_fresh(f, &k, path, sizeof path);
        cases[i].spoil(keyfile);
        cg_fs_warn_reset();
        cg_cache *c = cg_cache_new(f->dir);
        capture_begin(f);
        put_twice_and_get(c);
        assert_miss(c, &k);
        assert_one_warning(capture_end(f), keyfile, cases[i].reason, "memory only", NULL);
        assert_null(cg_cache_dir(c));
        assert_true(exists(path));                  /* entries are left as they are */
        cg_cache_free(c);
    }
    rm_tree(f->dir);
    assert_int_equal(mkdir(f->dir, 0700), 0);
    cg_cache *c = cg_cache_new(f->dir);
    capture_begin(f);
    assert_miss(c, &k);
    char *err = capture_end(f);
    assert_string_equal(err, "");
    free(err);
    assert_false(exists(keyfile));
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
    fixture *f = *state;
    assert_int_equal(mkdir(f->dir, 0700), 0);
    assert_int_equal(chmod(f->dir, 0770), 0);
    cg_cache *c = cg_cache_new(f->dir);
    capture_begin(f);
    put_twice_and_get(c);
    compile_through(c, 1.0 + (double)(getpid() % 1000) / 1024.0);
    assert_one_warning(capture_end(f), f->dir, "writable by group or others", "memory only", NULL);
    assert_int_equal(count_files(f->dir), 0);
    assert_null(cg_cache_dir(c));
    cg_cache_free(c);

    assert_int_equal(chmod(f->dir, 0700), 0);
    cg_fs_warn_reset();
    c = cg_cache_new(f->dir);
    cg_cache_set_mem_limit(c, 0);
    cg_key k = key_of("group writable");
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    assert_hit(c, &k, OBJ, sizeof OBJ);
    assert_int_equal(chmod(f->dir, 0770), 0);
    capture_begin(f);
    assert_miss(c, &k);
    assert_one_warning(capture_end(f), f->dir, "writable by group or others", NULL);
    assert_null(cg_cache_dir(c));
    cg_cache_free(c);
}

/* A parent others can write (not sticky) is refused, nothing is made under
 * it, and a bad grandparent is as bad. */
static void test_parent_writable(void **state)
{
    fixture *f = *state;
    static const mode_t modes[] = {0777, 0775, 0757, 0770};
    char pub[160], dir[200], deep[220];
    snprintf(pub, sizeof pub, "%s/pub", f->root);
    snprintf(dir, sizeof dir, "%s/cache", pub);
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        assert_int_equal(mkdir(pub, 0700), 0);
        assert_int_equal(chmod(pub, modes[i]), 0);
        cg_fs_warn_reset();
        cg_cache *c = cg_cache_new(dir);
        capture_begin(f);
        put_twice_and_get(c);
        assert_one_warning(capture_end(f), pub, "writable by group or others and not sticky",
                           "memory only", NULL);
        assert_false(exists(dir));
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
    capture_begin(f);
    put_twice_and_get(c);
    assert_one_warning(capture_end(f), pub, "not sticky", NULL);
    cg_cache_free(c);
}

/* A sticky parent others can write (/tmp) is fine. */
static void test_parent_sticky(void **state)
{
    fixture *f = *state;
    static const mode_t modes[] = {01777, 01770};
    char pub[160], dir[200], path[300];
    snprintf(pub, sizeof pub, "%s/pub", f->root);
    snprintf(dir, sizeof dir, "%s/cache", pub);
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        assert_int_equal(mkdir(pub, 0700), 0);
        assert_int_equal(chmod(pub, modes[i]), 0);
        cg_key k = key_of("sticky");
        capture_begin(f);
        put_in(dir, &k, path, sizeof path);
        cg_cache *c = cg_cache_new(dir);
        assert_hit(c, &k, OBJ, sizeof OBJ);
        char *err = capture_end(f);
        assert_string_equal(err, "");
        free(err);
        assert_int_equal(stats(c).disk_hits, 1);
        cg_cache_free(c);
        rm_tree(pub);
    }
}

/* The path may go through links (absolute, relative), ".", ".." and be
 * relative to the working directory; a loop of links is refused. */
static void test_dir_paths(void **state)
{
    fixture *f = *state;
    char real[160], p[220], path[300], cwd[4096];
    cg_key k = key_of("paths");
    snprintf(real, sizeof real, "%s/real", f->root);
    assert_int_equal(mkdir(real, 0700), 0);
    snprintf(p, sizeof p, "%s/link", f->root);
    assert_int_equal(symlink(real, p), 0);
    snprintf(p, sizeof p, "%s/rel", f->root);
    assert_int_equal(symlink("real", p), 0);
    snprintf(p, sizeof p, "%s/link/cache", f->root);
    put_in(p, &k, path, sizeof path);
    snprintf(path, sizeof path, "%s/cache/%s.o", real, k.hex);
    assert_true(exists(path));
    static const char *const ways[] = {"%s/rel/cache", "%s/real/../link/./cache/", "%s//real/cache"};
    for (size_t i = 0; i < sizeof ways / sizeof *ways; i++) {
        snprintf(p, sizeof p, ways[i], f->root);
        cg_cache *c = cg_cache_new(p);
        assert_hit(c, &k, OBJ, sizeof OBJ);
        assert_int_equal(stats(c).disk_hits, 1);
        cg_cache_free(c);
    }
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(f->root), 0);
    cg_cache *c = cg_cache_new("rel/cache");
    assert_hit(c, &k, OBJ, sizeof OBJ);
    assert_int_equal(stats(c).disk_hits, 1);
    cg_cache_free(c);
    assert_int_equal(chdir(cwd), 0);

    snprintf(p, sizeof p, "%s/loop1", f->root);
    assert_int_equal(symlink("loop2", p), 0);
    snprintf(p, sizeof p, "%s/loop2", f->root);
    assert_int_equal(symlink("loop1", p), 0);
    snprintf(p, sizeof p, "%s/loop1/cache", f->root);
    c = cg_cache_new(p);
    capture_begin(f);
    put_twice_and_get(c);
    assert_one_warning(capture_end(f), p, "cannot be opened", "symbolic links", NULL);
    cg_cache_free(c);
}

/* Temp files a killed writer left (".*.tmp" older than a minute) are removed
 * when the directory is next opened; newer ones and other files stay. */
static void test_stale_tmp(void **state)
{
    fixture *f = *state;
    cg_key k = key_of("stale");
    char path[256], p[6][300];
    put_fresh(f, &k, path, sizeof path);
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
            write_file(p[i], "partial", 7, 0600);
        struct timespec t[2] = {{now.tv_sec - files[i].age, 0}, {now.tv_sec - files[i].age, 0}};
        assert_int_equal(utimensat(AT_FDCWD, p[i], t, 0), 0);
    }
    cg_cache *c = cg_cache_new(f->dir);
    assert_hit(c, &k, OBJ, sizeof OBJ);
    cg_cache_free(c);
    for (int i = 0; i < 6; i++)
        if (exists(p[i]) != files[i].stays)
            fail_msg("%s: want it %s", p[i], files[i].stays ? "kept" : "removed");
}

/* An entry's name taken by a directory: the write fails (one warning, memory
 * only), and a get of it is refused. */
static void test_write_fails(void **state)
{
    fixture *f = *state;
    cg_key k = key_of("write fails"), k2 = key_of("write fails 2");
    char path[256];
    put_fresh(f, &k2, path, sizeof path);
    path_of(f, &k, path, sizeof path);
    assert_int_equal(mkdir(path, 0700), 0);
    cg_cache *c = cg_cache_new(f->dir);
    capture_begin(f);
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    assert_hit(c, &k, OBJ, sizeof OBJ);
    assert_one_warning(capture_end(f), f->dir, "cannot be written", "Is a directory", "memory only", NULL);
    assert_null(cg_cache_dir(c));
    cg_cache_free(c);
    c = cg_cache_new(f->dir);
    capture_begin(f);
    assert_miss(c, &k);
    assert_one_warning(capture_end(f), path, "is not a regular file", NULL);
    assert_hit(c, &k2, OBJ, sizeof OBJ);
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
static void victim_refuses(const fixture *f, const char *dir, const cg_key *k, const char *where,
                           const char *reason)
{
    cg_fs_warn_reset();
    cg_cache *c = cg_cache_new(dir);
    void *obj = NULL;
    size_t len = 0;
    capture_begin(f);
    int r = cg_cache_get(c, k, &obj, &len);
    char *err = capture_end(f);
    bool planted = r == 0 && len == sizeof ATTACK && !memcmp(obj, ATTACK, len);
    free(obj);
    cg_cache_free(c);
    if (planted)
        fail_msg("the victim loaded the attacker's code from %s", dir);
    assert_int_equal(r, -1);
    assert_one_warning(err, where, reason, NULL);
}

/* Who owns what: an entry (with a good MAC), the directory, a parent, a link
 * in a sticky directory; a link of ours there is fine. */
static void test_owners(void **state)
{
    fixture *f = *state;
    if (!need_attacker())
        skip();
    cg_key k = key_of("owners");
    char path[256], p[200], real[200], dir[260];
    put_fresh(f, &k, path, sizeof path);
    assert_int_equal(lchown(path, atk.uid, atk.gid), 0);
    expect_rejected(f, &k, path, "belongs to another user");

    assert_int_equal(chown(f->dir, atk.uid, atk.gid), 0);
    victim_refuses(f, f->dir, &k, f->dir, "belongs to another user");

    snprintf(p, sizeof p, "%s/pub", f->root);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(chown(p, atk.uid, atk.gid), 0);
    snprintf(dir, sizeof dir, "%s/cache", p);
    victim_refuses(f, dir, &k, p, "neither you nor root");
    assert_false(exists(dir));

    snprintf(p, sizeof p, "%s/sticky", f->root);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(chmod(p, 01777), 0);
    snprintf(real, sizeof real, "%s/real", f->root);
    assert_int_equal(mkdir(real, 0700), 0);
    snprintf(p, sizeof p, "%s/sticky/link", f->root);
    assert_int_equal(symlink(real, p), 0);
    snprintf(dir, sizeof dir, "%s/cache", p);
    put_in(dir, &k, path, sizeof path);
    assert_int_equal(lchown(p, atk.uid, atk.gid), 0);
    victim_refuses(f, dir, &k, p, "symbolic link owned by another user");
}

/* Attack 1: the directory was once writable by others (made by a careless
 * script); the attacker planted an entry (a good format-1 checksum, mode
 * 0600) then, and the victim tightened the mode without looking inside. */
static void test_attack_planted_entry(void **state)
{
    fixture *f = *state;
    if (!need_attacker())
        skip();
    cg_key k = key_of("attack: planted");
    char path[256], tmp[300];
    uint8_t forged[HDR + sizeof ATTACK];
    put_fresh(f, &k, path, sizeof path);
    size_t n = forge_from(path, forged);
    assert_int_equal(chmod(f->root, 0755), 0);
    assert_int_equal(chmod(f->dir, 0777), 0);
    snprintf(tmp, sizeof tmp, "%s/.planted", f->dir);
    as_attacker(&(plant){PLANT_NEW, path, tmp, NULL, NULL, forged, n});
    assert_int_equal(chmod(f->dir, 0700), 0);
    assert_int_equal(owner_of(path), atk.uid);
    victim_refuses(f, f->dir, &k, path, "belongs to another user");
    assert_false(exists(path));
}

/* Attack 2: an entry left writable by others (restored from a backup with
 * umask 0) in a directory others may enter but not write; the attacker
 * rewrites it in place (a good format-1 checksum). */
static void test_attack_writable_entry(void **state)
{
    fixture *f = *state;
    if (!need_attacker())
        skip();
    cg_key k = key_of("attack: writable");
    char path[256];
    uint8_t forged[HDR + sizeof ATTACK];
    put_fresh(f, &k, path, sizeof path);
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
    fixture *f = *state;
    if (!need_attacker())
        skip();
    cg_key k = key_of("attack: swapped"), k2 = key_of("attack: swapped 2");
    char pub[160], dir[200], away[200], path[300], tmpl[300];
    uint8_t forged[HDR + sizeof ATTACK];
    put_fresh(f, &k, tmpl, sizeof tmpl);           /* the format, as an attacker knows it */
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
    capture_begin(f);
    void *obj = NULL;
    size_t len = 0;
    int r = cg_cache_get(c, &k, &obj, &len);
    int put = cg_cache_put(c, &k2, OBJ2, sizeof OBJ2);
    char *err = capture_end(f);
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
    assert_true(exists(p2));
    snprintf(p2, sizeof p2, "%s/%s.o", dir, k2.hex);
    assert_false(exists(p2));
    cg_cache_free(c);

    victim_refuses(f, dir, &k, pub, "writable by group or others and not sticky");
    assert_int_equal(chmod(pub, 0755), 0);
    victim_refuses(f, dir, &k, dir, "belongs to another user");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    unsetenv("TJIT_CACHE");
    unsetenv("TJIT_CACHE_FSYNC");
    const struct CMUnitTest tests[] = {
        T(test_sha256_vectors),   T(test_sha256_splits),        T(test_hmac_rfc4231),
        T(test_hmac_splits_and_equal), T(test_key_stable),      T(test_key_sensitive),
        T(test_memory_round_trip), T(test_disk_round_trip),     T(test_fsync_option),
        T(test_dir_created_with_parents), T(test_dir_removed_then_put), T(test_corrupt_payload),
        T(test_corrupt_header),   T(test_truncated),            T(test_other_key),
        T(test_unwritable_dir),   T(test_insecure_dir),         T(test_cache_env_off),
        T(test_bad_args),         T(test_lru_bound),            T(test_lru_then_disk),
        T(test_concurrent),       T(test_entry_mode),           T(test_umask),
        T(test_entry_symlink),    T(test_entry_forged),         T(test_entry_other_secret),
        T(test_key_file),         T(test_dir_group_writable),   T(test_parent_writable),
        T(test_parent_sticky),    T(test_dir_paths),            T(test_stale_tmp),
        T(test_write_fails),      T(test_owners),               T(test_attack_planted_entry),
        T(test_attack_writable_entry), T(test_attack_swapped_dir),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
