/* cache.h - the kernel cache: compiled object code by a hash of what produced it.
 *
 * The code generator asks the cache before compiling a kernel and stores the
 * object file it emits afterwards. Two layers: a bounded in-memory LRU, then a
 * directory of files (one per key). A key covers everything that makes an
 * object differ: the kernel's IR text, the host CPU name and feature string,
 * the LLVM version, the hash of the code generator's sources (CG_SOURCE_HASH,
 * made by the Makefile) and the entry format. The disk layer
 * holds code this process will run, so it trusts only what the user alone
 * could have written: a directory (and parents) nobody else can write, entries
 * of the user with mode 0600, authenticated by a per-user secret key
 * (cache_fs.h). See docs/cache.md.
 *
 * Environment (read when a cache is made; the global one on first use):
 *   TJIT_CACHE_DIR   directory of the disk layer (default $XDG_CACHE_HOME/tjit,
 *                    else ~/.cache/tjit); created with parents, mode 0700
 *   TJIT_CACHE=0     no disk layer (memory only), for every cache
 *   TJIT_CACHE_FSYNC=1  fsync each file before renaming it into place
 */
#ifndef TJ_CG_CACHE_H
#define TJ_CG_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* Default bound of a cache's memory layer, in bytes of object code. */
#define CG_CACHE_MEM_LIMIT ((size_t)64 << 20)

/* A cache key: the SHA-256 of the kernel's IR text plus the host CPU name and
 * feature string (LLVMGetHostCPUName/LLVMGetHostCPUFeatures), the LLVM
 * version (LLVM_VERSION_STRING and the loaded library's), and
 * CG_SOURCE_HASH, as 64 lowercase hex digits. */
typedef struct cg_key { char hex[65]; } cg_key;
/* 0, or -1 when the host's CPU cannot be read (out of memory; try again). */
int cg_key_make(const char *kernel_ir, size_t len, cg_key *out);

/* What a key covers besides the IR: cg_key_make uses the host's. Exposed so
 * tests can show each part changes the key. */
typedef struct cg_key_env {
    const char *cpu;           /* LLVMGetHostCPUName */
    const char *features;      /* LLVMGetHostCPUFeatures */
    const char *llvm_version;  /* "19.1.7 (built with 19.1.7)" */
    const char *codegen;       /* CG_SOURCE_HASH: SHA-256 of codegen's sources */
} cg_key_env;
/* The host's environment (computed on first success; the strings live for
 * the process), or NULL when LLVM could not allocate them (a later call retries). */
const cg_key_env *cg_key_env_host(void);
void cg_key_make_env(const char *kernel_ir, size_t len, const cg_key_env *env, cg_key *out);

/* The process-wide cache (thread-safe), made on first use from the
 * environment variables above. */
typedef struct cg_cache cg_cache;
cg_cache *cg_cache_global(void);

/* Looks the key up in memory, then on disk; on a hit returns 0 and a malloc'd
 * copy of the object file bytes (caller frees); -1 on a miss. A disk entry that
 * is not a regular file of ours with mode 0600, or is corrupt, truncated,
 * written for another key, or fails its MAC (header with magic, format
 * version, the key, the payload length and an HMAC-SHA256 of header and
 * payload) is warned about (once per reason per process), never returned
 * (counted as a miss and as corrupt, the bad file removed) and will be
 * replaced by the next put. A disk hit is also put in the memory layer. */
int cg_cache_get(cg_cache *c, const cg_key *k, void **obj, size_t *len);

/* Stores object bytes in memory and on disk (atomically: a 0600 temp file in
 * the same directory, renamed over `<hex>.o`). An unusable directory (cannot be
 * created, not ours, writable by others, a parent others could change, a bad
 * key file, a write fails) degrades the cache to memory only with a warning on
 * stderr (once per reason per process). Returns 0, or -1 when the bytes were
 * stored nowhere. */
int cg_cache_put(cg_cache *c, const cg_key *k, const void *obj, size_t len);

/* Statistics for tests and `tjit bench`. A miss is a get that returned -1. */
typedef struct cg_cache_stats {
    uint64_t mem_hits, disk_hits, misses;
    uint64_t corrupt;       /* bad disk entries seen (and removed) */
    uint64_t writes;        /* bytes written to disk (headers and payloads) */
    uint64_t mem_bytes;     /* object bytes held by the memory layer now */
    uint64_t evictions;     /* entries dropped from memory by the bound */
} cg_cache_stats;
void cg_cache_stats_get(cg_cache *c, cg_cache_stats *s);

/* For tests: a private cache on a given directory (NULL dir: memory only).
 * The directory is opened (and checked) on first use, created on the first
 * put. NULL when out of memory. */
cg_cache *cg_cache_new(const char *dir);
void cg_cache_free(cg_cache *c);
/* Bounds the memory layer (default CG_CACHE_MEM_LIMIT); evicts now if needed. */
void cg_cache_set_mem_limit(cg_cache *c, size_t bytes);
/* The disk directory in use, or NULL when the cache is memory only (never had
 * one, TJIT_CACHE=0, or degraded). */
const char *cg_cache_dir(cg_cache *c);

#endif
