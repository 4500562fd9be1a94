/* hmac.c - HMAC-SHA256 after RFC 2104: H((K ^ opad) || H((K ^ ipad) || m)),
 * K the key zero-padded to the 64-byte block (hashed first when longer). */
#include <string.h>

#include "hmac.h"

void cg_hmac_init(cg_hmac_ctx *h, const void *key, size_t keylen)
{
    uint8_t k[64] = {0}, pad[64];
    if (keylen > sizeof k)
        cg_sha256(key, keylen, k);
    else if (keylen)
        memcpy(k, key, keylen);
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    cg_sha256_init(&h->inner);
    cg_sha256_update(&h->inner, pad, 64);
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    cg_sha256_init(&h->outer);
    cg_sha256_update(&h->outer, pad, 64);
    explicit_bzero(k, sizeof k);     /* key material does not outlive the call */
    explicit_bzero(pad, sizeof pad);
}

void cg_hmac_update(cg_hmac_ctx *h, const void *data, size_t len)
{
    cg_sha256_update(&h->inner, data, len);
}

void cg_hmac_final(cg_hmac_ctx *h, uint8_t out[32])
{
    uint8_t inner[32];
    cg_sha256_final(&h->inner, inner);
    cg_sha256_update(&h->outer, inner, 32);
    cg_sha256_final(&h->outer, out);
    explicit_bzero(h, sizeof *h);
}

void cg_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len, uint8_t out[32])
{
    cg_hmac_ctx h;
    cg_hmac_init(&h, key, keylen);
    cg_hmac_update(&h, data, len);
    cg_hmac_final(&h, out);
}

bool cg_hmac_equal(const uint8_t a[32], const uint8_t b[32])
{
    volatile uint8_t d = 0;
    for (int i = 0; i < 32; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}
