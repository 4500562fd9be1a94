/* sha256.h - SHA-256 (FIPS 180-4), written from the specification, for the
 * kernel cache's keys (codegen/cache.c) and, under HMAC (hmac.h), its entries'
 * MACs. The only branches and table indexes depend on lengths and round
 * numbers, never on the data, so hashing the secret key leaks nothing by
 * timing. */
#ifndef TJ_CG_SHA256_H
#define TJ_CG_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct cg_sha256_ctx {
    uint32_t h[8];
    uint64_t nbytes;        /* message length so far */
    uint8_t buf[64];        /* the partial block */
    size_t nbuf;
} cg_sha256_ctx;

void cg_sha256_init(cg_sha256_ctx *s);
void cg_sha256_update(cg_sha256_ctx *s, const void *data, size_t len);
void cg_sha256_final(cg_sha256_ctx *s, uint8_t out[32]);
/* One call: out = SHA-256(data). */
void cg_sha256(const void *data, size_t len, uint8_t out[32]);
/* 32 bytes as 64 lowercase hex digits and a NUL. */
void cg_sha256_hex(const uint8_t digest[32], char hex[65]);

#endif
