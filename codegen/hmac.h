/* hmac.h - HMAC-SHA256 (RFC 2104, FIPS 198-1) over codegen/sha256.c: the
 * kernel cache authenticates every disk entry with it under a per-user
 * secret key (codegen/cache_fs.c). Checked against RFC 4231 in
 * tests/test_cache.c. No branch or table index depends on the key or the
 * data, and cg_hmac_equal compares in constant time. */
#ifndef TJ_CG_HMAC_H
#define TJ_CG_HMAC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

typedef struct cg_hmac_ctx {
    cg_sha256_ctx inner;    /* SHA-256((K ^ ipad) || message) so far */
    cg_sha256_ctx outer;    /* SHA-256(K ^ opad), finished by cg_hmac_final */
} cg_hmac_ctx;

/* A key longer than 64 bytes is hashed first (RFC 2104). */
void cg_hmac_init(cg_hmac_ctx *h, const void *key, size_t keylen);
void cg_hmac_update(cg_hmac_ctx *h, const void *data, size_t len);
void cg_hmac_final(cg_hmac_ctx *h, uint8_t out[32]);
/* One call: out = HMAC-SHA256(key, data). */
void cg_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len, uint8_t out[32]);
/* Whether two MACs are equal, in time independent of where they differ. */
bool cg_hmac_equal(const uint8_t a[32], const uint8_t b[32]);

#endif
