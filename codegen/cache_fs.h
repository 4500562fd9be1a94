/* cache_fs.h - the kernel cache's files (codegen/cache.c), opened so that no
 * other local user can choose the object code we load.
 *
 *   cg_dir_open:  walks the directory's path from / one component at a time
 *                 (openat, O_NOFOLLOW, links resolved by hand), checking each
 *                 directory; holds the cache directory open; loads or creates
 *                 the secret key in it; removes stale temp files
 *   entries:      opened relative to that directory fd (never by path), with
 *                 O_NOFOLLOW, checked on the opened fd (regular, ours, 0600)
 *                 before a byte is read; written as an exclusive 0600 temp file
 *                 renamed over the entry inside the same directory fd
 *
 * Every failed check prints one warning on stderr per (object, reason) per
 * process, naming the file and the reason. docs/cache.md has the threat model.
 */
#ifndef TJ_CG_CACHE_FS_H
#define TJ_CG_CACHE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define CG_KEY_FILE "secret.key"     /* the per-user HMAC key, in the cache directory */
#define CG_KEY_BYTES 32
#define CG_STALE_TMP_SECONDS 60      /* temp files older than this are a killed writer's */

/* What a warning is about: the object, then the reason. */
#define CG_OBJECTS(X)                                                                  \
    X(CG_O_DIR, "directory", "kernels are cached in memory only")                      \
    X(CG_O_PARENT, "directory's parent", "kernels are cached in memory only")          \
    X(CG_O_KEY, "key file", "kernels are cached in memory only")                       \
    X(CG_O_ENTRY, "entry", "it is not loaded (removed, the kernel is recompiled)")

#define CG_REASONS(X)                                                                  \
    X(CG_R_CREATE, "cannot be created")                                                \
    X(CG_R_OPEN, "cannot be opened")                                                   \
    X(CG_R_WRITE, "cannot be written")                                                 \
    X(CG_R_NOTDIR, "is not a directory")                                               \
    X(CG_R_SYMLINK, "is a symbolic link")                                              \
    X(CG_R_LINK_OWNER, "is a symbolic link owned by another user in a directory "      \
                       "others can write")                                             \
    X(CG_R_NOTREG, "is not a regular file")                                            \
    X(CG_R_OWNER, "belongs to another user")                                           \
    X(CG_R_PARENT_OWNER, "belongs to another user (neither you nor root)")             \
    X(CG_R_WRITABLE, "is writable by group or others (chmod 0700 it)")                 \
    X(CG_R_PARENT_WRITABLE, "is writable by group or others and not sticky")           \
    X(CG_R_MODE, "has a mode other than 0600")                                         \
    X(CG_R_SIZE, "has the wrong size")                                                 \
    X(CG_R_CORRUPT, "is truncated or corrupt")                                         \
    X(CG_R_MAC, "fails authentication (modified, or written with another key)")

#define CG_ENUM(name, ...) name,
typedef enum { CG_OBJECTS(CG_ENUM) CG_O_COUNT } cg_fs_object;
typedef enum { CG_R_NONE, CG_REASONS(CG_ENUM) CG_R_COUNT } cg_fs_reason;
#undef CG_ENUM

/* Prints "tjit: warning: kernel cache <object> '<dir>[/<name>]' <reason>[: <errno
 * text>]; <consequence>" unless this (object, reason) was warned about already
 * in this process. name may be NULL; err 0 adds no errno text. */
void cg_fs_warn(cg_fs_object o, cg_fs_reason r, const char *dir, const char *name, int err);
/* Forgets which warnings were printed (tests). */
void cg_fs_warn_reset(void);

/* An open cache directory and its key. refs is managed by the cache (under
 * its lock); cg_dir_close releases the rest. */
typedef struct cg_dir {
    int fd;                          /* O_RDONLY|O_DIRECTORY, held while in use */
    uint8_t key[CG_KEY_BYTES];
    int refs;
} cg_dir;

/* Opens path (absolute, or relative to the working directory) as a cache
 * directory: every directory from / down, reached through links too, must
 * belong to us or root and be unwritable by group and others unless sticky;
 * the cache directory itself must be ours and unwritable by group and others.
 * create: make missing directories (mode 0700) and the key. Returns 1 with
 * *out (refs 1), 0 when the directory does not exist and !create, -1 when
 * refused (warned). */
int cg_dir_open(const char *path, bool create, cg_dir **out);
/* Checks the open directory again (fstat: still ours, still unwritable by
 * others). 1: fine; 0: it was removed (open it again); -1: refused (warned). */
int cg_dir_recheck(const cg_dir *d, const char *path);
void cg_dir_close(cg_dir *d);

/* Opens entry `name` of d for reading after the checks above. Returns the fd,
 * or -1 with *why (CG_R_NONE: there is no such entry; otherwise the entry is
 * bad, *st says which file, for cg_entry_remove). */
int cg_entry_open(const cg_dir *d, const char *name, struct stat *st, cg_fs_reason *why);
/* Removes entry `name` if it is still the file *bad (a writer may have renamed
 * a good one over it since). */
void cg_entry_remove(const cg_dir *d, const char *name, const struct stat *bad);
/* Writes a then b to a new 0600 temp file in d (created exclusively) and
 * renames it over `name`; fsyncs first when sync. 0, or -1 with errno. */
int cg_entry_write(const cg_dir *d, const char *name, const void *a, size_t na, const void *b,
                   size_t nb, bool sync);
/* read(2) until n bytes arrive; false on an error or an early end. */
bool cg_read_all(int fd, void *buf, size_t n);

#endif
