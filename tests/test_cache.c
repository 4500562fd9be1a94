/* test_cache.c - the kernel cache (codegen/cache.c) and its SHA-256 and
 * HMAC: FIPS and RFC 4231 test vectors, key stability and sensitivity, memory
 * and disk round trips, a second cache on the same directory (a new process),
 * corrupt, truncated and misplaced files, unusable directories, TJIT_CACHE=0,
 * the LRU bound and concurrent use. What keeps another user's code out is in
 * test_cache_sec.c. Each test gets a fresh mkdtemp directory, removed after. */
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
#include "../codegen/sha256.h"
#include "util.h"
#include "util_cache.h"

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
    cg_key k1 = tu_key_of(ir), k2 = tu_key_of(ir), k3;
    assert_string_equal(k1.hex, k2.hex);
    assert_int_equal(strlen(k1.hex), 64);
    assert_int_equal(strspn(k1.hex, "0123456789abcdef"), 64);
    cg_key_make_env(ir, strlen(ir), cg_key_env_host(), &k3);
    assert_string_equal(k1.hex, k3.hex);
    const cg_key_env *h = cg_key_env_host();
    assert_true(h->cpu[0] && h->llvm_version[0]);
    assert_non_null(strstr(h->llvm_version, "19."));
    assert_int_equal(strlen(h->codegen), 64);   /* the Makefile's hash of codegen's sources */
}

static void test_key_sensitive(void **state)
{
    const char *ir = "graph(%a: f32[4]) { %b = exp(%a) return %b }";
    size_t n = strlen(ir);
    cg_key base = tu_key_of(ir), k;
    cg_key_make(ir, n - 1, &k);                    /* a prefix of the text */
    assert_string_not_equal(base.hex, k.hex);
    k = tu_key_of("graph(%a: f32[5]) { %b = exp(%a) return %b }");
    assert_string_not_equal(base.hex, k.hex);
    k = tu_key_of("");
    assert_string_not_equal(base.hex, k.hex);

    cg_key_env e = *cg_key_env_host();
    e.codegen = "another build of codegen";
    cg_key_make_env(ir, n, &e, &k);
    assert_string_not_equal(base.hex, k.hex);
    e = *cg_key_env_host();
    e.cpu = strcmp(e.cpu, "znver5") ? "znver5" : "sapphirerapids";   /* another CPU than this one */
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
    cg_key_env e1 = {"ab", "c", "19", "1"}, e2 = {"a", "bc", "19", "1"};
    cg_key_make_env("x", 1, &e1, &a);
    cg_key_make_env("x", 1, &e2, &b);
    assert_string_not_equal(a.hex, b.hex);
}

/* ---- memory and disk round trips -------------------------------------------------- */

static void test_memory_round_trip(void **state)
{
    cg_cache *c = cg_cache_new(NULL);
    assert_non_null(c);
    cg_key k = tu_key_of("memory");
    tu_assert_miss(c, &k);
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    tu_assert_hit(c, &k, OBJ, sizeof OBJ);
    /* The caller's copy is its own. */
    void *obj;
    size_t len;
    assert_int_equal(cg_cache_get(c, &k, &obj, &len), 0);
    memset(obj, 0, len);
    free(obj);
    tu_assert_hit(c, &k, OBJ, sizeof OBJ);
    /* A second put replaces the bytes. */
    assert_int_equal(cg_cache_put(c, &k, OBJ2, sizeof OBJ2), 0);
    tu_assert_hit(c, &k, OBJ2, sizeof OBJ2);
    cg_cache_stats s = tu_stats(c);
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
    tu_fixture *f = *state;
    cg_cache *a = cg_cache_new(f->dir);
    cg_key k = tu_key_of("disk");
    tu_assert_miss(a, &k);
    assert_false(tu_exists(f->dir));                  /* a get does not create it */
    assert_int_equal(cg_cache_put(a, &k, OBJ, sizeof OBJ), 0);
    assert_string_equal(cg_cache_dir(a), f->dir);
    char path[256];
    struct stat st;
    assert_int_equal(stat(tu_path_of(f, &k, path, sizeof path), &st), 0);
    assert_int_equal(st.st_size, HDR + sizeof OBJ);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(tu_count_files(f->dir), 2);      /* the entry and the key, no temp file */
    char key[256];
    snprintf(key, sizeof key, "%s/%s", f->dir, CG_KEY_FILE);
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_size, CG_KEY_BYTES);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, geteuid());
    assert_int_equal(tu_stats(a).writes, HDR + sizeof OBJ);
    tu_assert_hit(a, &k, OBJ, sizeof OBJ);
    assert_int_equal(tu_stats(a).mem_hits, 1);
    cg_cache_free(a);

    /* A new cache on the directory: a new process. */
    cg_cache *b = cg_cache_new(f->dir);
    tu_assert_hit(b, &k, OBJ, sizeof OBJ);
    tu_assert_hit(b, &k, OBJ, sizeof OBJ);
    cg_cache_stats s = tu_stats(b);
    assert_int_equal(s.disk_hits, 1);
    assert_int_equal(s.mem_hits, 1);
    assert_int_equal(s.misses, 0);
    assert_int_equal(s.corrupt, 0);
    /* A put over the entry replaces the file. */
    assert_int_equal(cg_cache_put(b, &k, OBJ2, sizeof OBJ2), 0);
    cg_cache_free(b);
    cg_cache *c = cg_cache_new(f->dir);
    tu_assert_hit(c, &k, OBJ2, sizeof OBJ2);
    cg_cache_free(c);
}

static void test_fsync_option(void **state)
{
    tu_fixture *f = *state;
    setenv("TJIT_CACHE_FSYNC", "1", 1);
    cg_cache *c = cg_cache_new(f->dir);
    unsetenv("TJIT_CACHE_FSYNC");
    cg_key k = tu_key_of("fsync");
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    cg_cache_free(c);
    c = cg_cache_new(f->dir);
    tu_assert_hit(c, &k, OBJ, sizeof OBJ);
    assert_int_equal(tu_stats(c).disk_hits, 1);
    cg_cache_free(c);
}

static void test_dir_created_with_parents(void **state)
{
    tu_fixture *f = *state;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/a/b/c/", f->root);
    cg_cache *c = cg_cache_new(dir);
    cg_key k = tu_key_of("parents");
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    struct stat st;
    snprintf(dir, sizeof dir, "%s/a/b/c", f->root);
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    snprintf(dir, sizeof dir, "%s/a", f->root);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(tu_count_files(dir), 1);
    cg_cache_free(c);
}

/* The directory removed while the cache runs: the next put makes it again. */
static void test_dir_removed_then_put(void **state)
{
    tu_fixture *f = *state;
    cg_cache *c = cg_cache_new(f->dir);
    cg_key k1 = tu_key_of("one"), k2 = tu_key_of("two");
    char path[256];
    assert_int_equal(cg_cache_put(c, &k1, OBJ, sizeof OBJ), 0);
    tu_rm_tree(f->dir);
    assert_int_equal(cg_cache_put(c, &k2, OBJ2, sizeof OBJ2), 0);
    assert_true(tu_exists(tu_path_of(f, &k2, path, sizeof path)));
    assert_string_equal(cg_cache_dir(c), f->dir);
    cg_cache_free(c);
    /* A new directory has a new key, and the entry was written under it. */
    c = cg_cache_new(f->dir);
    cg_cache_set_mem_limit(c, 0);
    tu_assert_hit(c, &k2, OBJ2, sizeof OBJ2);
    tu_assert_miss(c, &k1);
    /* Removed while open, then a get: a miss (nothing is created) until a put. */
    tu_rm_tree(f->dir);
    tu_assert_miss(c, &k2);
    assert_false(tu_exists(f->dir));
    assert_int_equal(cg_cache_put(c, &k1, OBJ, sizeof OBJ), 0);
    tu_assert_hit(c, &k1, OBJ, sizeof OBJ);
    assert_int_equal(tu_stats(c).corrupt, 0);
    cg_cache_free(c);
}

/* ---- bad files --------------------------------------------------------------------- */
static void test_corrupt_payload(void **state)
{
    tu_fixture *f = *state;
    cg_key k = tu_key_of("corrupt payload");
    char path[256];
    tu_put_fresh(f, &k, path, sizeof path);
    flip_byte(path, HDR + 5);
    tu_expect_rejected(f, &k, path, BAD_MAC);
    flip_byte(path, HDR + sizeof OBJ - 1);         /* the last byte */
    tu_expect_rejected(f, &k, path, BAD_MAC);
}

/* Each field of the header: magic, format, header size, key, length, MAC. */
static void test_corrupt_header(void **state)
{
    tu_fixture *f = *state;
    static const struct { long off; const char *reason; } cases[] = {
        {0, CORRUPT},  {7, CORRUPT},  {8, CORRUPT},  {12, CORRUPT},  {16, CORRUPT},
        {79, CORRUPT}, {80, CORRUPT}, {87, CORRUPT}, {88, BAD_MAC}, {119, BAD_MAC},
    };
    cg_key k = tu_key_of("corrupt header");
    char path[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tu_put_fresh(f, &k, path, sizeof path);
        flip_byte(path, cases[i].off);
        tu_expect_rejected(f, &k, path, cases[i].reason);
    }
}

static void test_truncated(void **state)
{
    tu_fixture *f = *state;
    static const off_t sizes[] = {HDR + sizeof OBJ - 1, HDR + 1, HDR, HDR - 1, 10, 0};
    cg_key k = tu_key_of("truncated");
    char path[256];
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        tu_put_fresh(f, &k, path, sizeof path);
        assert_int_equal(truncate(path, sizes[i]), 0);
        tu_expect_rejected(f, &k, path, CORRUPT);
    }
    /* Bytes appended after the payload are just as bad. */
    tu_put_fresh(f, &k, path, sizeof path);
    FILE *fp = fopen(path, "ab");
    fputs("junk", fp);
    fclose(fp);
    tu_expect_rejected(f, &k, path, CORRUPT);
}

/* A file renamed onto another key's name: its header names the wrong key. */
static void test_other_key(void **state)
{
    tu_fixture *f = *state;
    cg_key k1 = tu_key_of("first kernel"), k2 = tu_key_of("second kernel");
    char p1[256], p2[256];
    tu_put_fresh(f, &k1, p1, sizeof p1);
    tu_put_fresh(f, &k2, p2, sizeof p2);
    assert_int_equal(rename(p1, p2), 0);
    cg_cache *c = cg_cache_new(f->dir);
    tu_capture_begin(f);
    tu_assert_miss(c, &k2);
    tu_assert_one_warning(tu_capture_end(f), p2, CORRUPT, NULL);
    tu_assert_miss(c, &k1);                           /* gone: a plain miss */
    cg_cache_stats s = tu_stats(c);
    assert_int_equal(s.corrupt, 1);
    assert_int_equal(s.misses, 2);
    assert_false(tu_exists(p2));
    cg_cache_free(c);
    /* An entry for another CPU is another key: written under its own name. */
    cg_key_env e = *cg_key_env_host();
    e.cpu = "some-other-cpu";
    cg_key k3;
    cg_key_make_env("first kernel", 12, &e, &k3);
    assert_string_not_equal(k3.hex, k1.hex);
}

/* ---- unusable directories and TJIT_CACHE=0 ----------------------------------------- */

static void test_unwritable_dir(void **state)
{
    tu_fixture *f = *state;
    char file[160], dir[200];
    snprintf(file, sizeof file, "%s/file.txt", f->root);
    FILE *fp = fopen(file, "w");
    fclose(fp);
    snprintf(dir, sizeof dir, "%s/sub", file);
    cg_cache *c = cg_cache_new(dir);
    tu_capture_begin(f);
    tu_put_twice_and_get(c);
    tu_assert_one_warning(tu_capture_end(f), dir, "cannot be created", "Not a directory", "memory only", NULL);
    assert_null(cg_cache_dir(c));
    assert_int_equal(tu_stats(c).writes, 0);
    /* Still quiet afterwards. */
    tu_capture_begin(f);
    tu_put_twice_and_get(c);
    char *err = tu_capture_end(f);
    assert_string_equal(err, "");
    free(err);
    cg_cache_free(c);
    /* A get (which creates nothing) names the file in the way. */
    cg_fs_warn_reset();
    c = cg_cache_new(dir);
    tu_capture_begin(f);
    tu_assert_miss(c, &(cg_key){"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"});
    tu_assert_one_warning(tu_capture_end(f), dir, "is not a directory", NULL);
    cg_cache_free(c);
}

/* A directory others can write is refused (their object code would run as ours). */
static void test_insecure_dir(void **state)
{
    tu_fixture *f = *state;
    assert_int_equal(mkdir(f->dir, 0700), 0);
    assert_int_equal(chmod(f->dir, 0777), 0);
    cg_cache *c = cg_cache_new(f->dir);
    tu_capture_begin(f);
    tu_put_twice_and_get(c);
    tu_assert_one_warning(tu_capture_end(f), f->dir, "writable by group or others", NULL);
    assert_int_equal(tu_count_files(f->dir), 0);
    cg_cache_free(c);
}

static void test_cache_env_off(void **state)
{
    tu_fixture *f = *state;
    setenv("TJIT_CACHE", "0", 1);
    cg_cache *c = cg_cache_new(f->dir);
    tu_capture_begin(f);
    tu_put_twice_and_get(c);
    char *err = tu_capture_end(f);
    assert_string_equal(err, "");
    free(err);
    assert_false(tu_exists(f->dir));
    assert_null(cg_cache_dir(c));
    cg_cache_free(c);

    /* The process-wide cache, made now, honours it too. */
    char gdir[200];
    snprintf(gdir, sizeof gdir, "%s/global", f->root);
    setenv("TJIT_CACHE_DIR", gdir, 1);
    cg_cache *g = cg_cache_global();
    assert_non_null(g);
    assert_ptr_equal(g, cg_cache_global());
    cg_key k = tu_key_of("global");
    assert_int_equal(cg_cache_put(g, &k, OBJ, sizeof OBJ), 0);
    tu_assert_hit(g, &k, OBJ, sizeof OBJ);
    assert_false(tu_exists(gdir));
    assert_null(cg_cache_dir(g));
    unsetenv("TJIT_CACHE");
    unsetenv("TJIT_CACHE_DIR");

    /* Any other value keeps the disk layer. */
    setenv("TJIT_CACHE", "1", 1);
    c = cg_cache_new(f->dir);
    assert_int_equal(cg_cache_put(c, &k, OBJ, sizeof OBJ), 0);
    assert_int_equal(tu_count_files(f->dir), 2);      /* the entry and the key */
    cg_cache_free(c);
    unsetenv("TJIT_CACHE");
}

static void test_bad_args(void **state)
{
    tu_fixture *f = *state;
    cg_cache *c = cg_cache_new(f->dir);
    cg_key k = tu_key_of("args"), bad;
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
    assert_int_equal(tu_count_files(f->root), 0);
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
    cg_key ka = tu_key_of("a"), kb = tu_key_of("b"), kd = tu_key_of("d"), kbig = tu_key_of("big");
    cg_cache_set_mem_limit(c, 2500);
    assert_int_equal(cg_cache_put(c, &ka, a, sizeof a), 0);
    assert_int_equal(cg_cache_put(c, &kb, b, sizeof b), 0);
    tu_assert_hit(c, &ka, a, sizeof a);               /* a is now the most recent */
    assert_int_equal(cg_cache_put(c, &kd, d, sizeof d), 0);
    tu_assert_miss(c, &kb);                           /* b was least recent */
    tu_assert_hit(c, &ka, a, sizeof a);
    tu_assert_hit(c, &kd, d, sizeof d);
    cg_cache_stats s = tu_stats(c);
    assert_int_equal(s.evictions, 1);
    assert_int_equal(s.mem_bytes, 2000);
    /* Larger than the bound and no disk: stored nowhere. */
    assert_int_equal(cg_cache_put(c, &kbig, big, sizeof big), -1);
    tu_assert_miss(c, &kbig);
    assert_int_equal(tu_stats(c).mem_bytes, 2000);
    /* Lowering the bound evicts at once. */
    cg_cache_set_mem_limit(c, 1500);
    assert_int_equal(tu_stats(c).mem_bytes, 1000);
    tu_assert_hit(c, &kd, d, sizeof d);
    cg_cache_set_mem_limit(c, 0);
    assert_int_equal(tu_stats(c).mem_bytes, 0);
    tu_assert_miss(c, &kd);
    cg_cache_free(c);
}

/* With a disk layer an entry evicted from memory is read back from disk. */
static void test_lru_then_disk(void **state)
{
    tu_fixture *f = *state;
    cg_cache *c = cg_cache_new(f->dir);
    cg_cache_set_mem_limit(c, sizeof OBJ);
    cg_key k1 = tu_key_of("evicted"), k2 = tu_key_of("kept");
    assert_int_equal(cg_cache_put(c, &k1, OBJ, sizeof OBJ), 0);
    assert_int_equal(cg_cache_put(c, &k2, OBJ, sizeof OBJ), 0);
    tu_assert_hit(c, &k1, OBJ, sizeof OBJ);
    assert_int_equal(tu_stats(c).disk_hits, 1);
    tu_assert_hit(c, &k1, OBJ, sizeof OBJ);
    assert_int_equal(tu_stats(c).mem_hits, 1);
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
        cg_key k = tu_key_of(name);
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
    tu_fixture *f = *state;
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
        cg_cache_stats s = tu_stats(all[i]);
        assert_int_equal(s.corrupt, 0);
        assert_true(s.mem_hits + s.disk_hits > 0);
        cg_cache_free(all[i]);
    }
    assert_int_equal(tu_count_files(f->dir), NKEYS + 1);  /* every key and secret.key, no temp files */
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_cache_setup, tu_cache_teardown)

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
        T(test_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
