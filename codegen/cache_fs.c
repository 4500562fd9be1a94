/* cache_fs.c - the kernel cache's directory, key file and entries on disk
 * (cache_fs.h): what is checked before object code is trusted, and the
 * warnings when a check fails.
 *
 *   cg_dir_open(path)
 *     "/" --openat(O_PATH|O_NOFOLLOW)--> each component, fstat'd:
 *          a directory we descend from: ours or root's, and not writable by
 *            group/others unless sticky (/tmp)
 *          a symbolic link: read and spliced into the rest of the path (at
 *            most 40); in a directory others can write it must be ours or root's
 *          missing: mkdirat 0700 when creating
 *     the last one: ours, not writable by group/others; reopened O_RDONLY and
 *     held; then secret.key loaded (or made) and stale .*.tmp files removed.
 *
 * Everything after the walk is relative to the held fd, so renaming the
 * directory away and putting another in its place changes nothing for us.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cache_fs.h"

#define MAX_LINKS 40

/* ---- warnings ---------------------------------------------------------------------- */

#define CG_TEXT2(name, text) text,
#define CG_TEXT3(name, what, then) what,
#define CG_THEN(name, what, then) then,
static const char *const object_names[] = {CG_OBJECTS(CG_TEXT3)};
static const char *const object_then[] = {CG_OBJECTS(CG_THEN)};
static const char *const reason_text[] = {"", CG_REASONS(CG_TEXT2)};

static atomic_bool warned[CG_O_COUNT][CG_R_COUNT];

void cg_fs_warn(cg_fs_object o, cg_fs_reason r, const char *dir, const char *name, int err)
{
    if (atomic_exchange(&warned[o][r], true))
        return;
    fprintf(stderr, "tjit: warning: kernel cache %s '%s%s%s' %s%s%s; %s\n", object_names[o], dir,
            name ? "/" : "", name ? name : "", reason_text[r], err ? ": " : "",
            err ? strerror(err) : "", object_then[o]);
}

void cg_fs_warn_reset(void)
{
    for (int o = 0; o < CG_O_COUNT; o++)
        for (int r = 0; r < CG_R_COUNT; r++)
            atomic_store(&warned[o][r], false);
}

/* ---- small helpers ------------------------------------------------------------------ */

bool cg_read_all(int fd, void *buf, size_t n)
{
    for (uint8_t *p = buf; n;) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r, n -= (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *buf, size_t n)
{
    for (const uint8_t *p = buf; n;) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;
            return false;
        }
        p += r, n -= (size_t)r;
    }
    return true;
}

static void close_keep_errno(int fd)
{
    int err = errno;
    close(fd);
    errno = err;
}

/* A temp file name in the cache directory: ".<what>.<pid>.<n>.tmp", unique
 * within the process by n and across processes by the pid. */
static void tmp_name(char *buf, size_t n, const char *what)
{
    static atomic_uint seq;
    snprintf(buf, n, ".%s.%ld.%u.tmp", what, (long)getpid(), atomic_fetch_add(&seq, 1));
}

/* Whether a file we are about to trust is a regular file of ours with mode
 * exactly 0600; the reason when not. */
static cg_fs_reason file_check(const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return CG_R_NOTREG;
    if (st->st_uid != geteuid())
        return CG_R_OWNER;
    if ((st->st_mode & 07777) != 0600)
        return CG_R_MODE;
    return CG_R_NONE;
}

/* ---- the walk ----------------------------------------------------------------------- */

typedef struct walk {
    const char *path;             /* as configured, for messages */
    char cur[PATH_MAX];           /* the real path of fd (no links, no dots) */
    char todo[2 * PATH_MAX];      /* what is left to walk */
    int fd;                       /* O_PATH */
    struct stat st;               /* of fd */
    int links;
} walk;

/* fd of "/" in w; false (warned) when it cannot be opened. */
static bool walk_root(walk *w)
{
    if (w->fd >= 0)
        close(w->fd);
    strcpy(w->cur, "/");
    w->fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (w->fd < 0 || fstat(w->fd, &w->st)) {
        cg_fs_warn(CG_O_PARENT, CG_R_OPEN, "/", NULL, errno);
        return false;
    }
    return true;
}

/* Whether the directory we stand in may be descended from: another user who
 * could rename its entries could put any directory under our path. */
static bool parent_ok(const walk *w)
{
    uid_t u = w->st.st_uid;
    if (u != geteuid() && u != 0) {
        cg_fs_warn(CG_O_PARENT, CG_R_PARENT_OWNER, w->cur, NULL, 0);
        return false;
    }
    if ((w->st.st_mode & 022) && !(w->st.st_mode & S_ISVTX)) {
        cg_fs_warn(CG_O_PARENT, CG_R_PARENT_WRITABLE, w->cur, NULL, 0);
        return false;
    }
    return true;
}

/* Pops the next component of w->todo into comp; false at the end. */
static bool next_component(walk *w, char comp[NAME_MAX + 1])
{
    char *p = w->todo;
    while (*p == '/')
        p++;
    size_t n = strcspn(p, "/");
    if (!n)
        return false;
    if (n > NAME_MAX)
        n = NAME_MAX;       /* openat then fails with ENOENT or ENAMETOOLONG below */
    memcpy(comp, p, n);
    comp[n] = 0;
    p += strcspn(p, "/");
    memmove(w->todo, p, strlen(p) + 1);
    return true;
}

/* comp is a symbolic link in w's directory: splices its target in front of
 * what is left to walk. False (warned) when it may not be followed. */
static bool follow_link(walk *w, const char *comp, const struct stat *lst)
{
    char target[PATH_MAX];
    if ((w->st.st_mode & 022) && lst->st_uid != geteuid() && lst->st_uid != 0) {
        cg_fs_warn(CG_O_PARENT, CG_R_LINK_OWNER, w->cur, comp, 0);
        return false;
    }
    ssize_t n = readlinkat(w->fd, comp, target, sizeof target - 1);
    if (n < 0 || ++w->links > MAX_LINKS) {
        cg_fs_warn(CG_O_DIR, CG_R_OPEN, w->path, NULL, n < 0 ? errno : ELOOP);
        return false;
    }
    target[n] = 0;
    size_t left = strlen(w->todo);
    if (left + (size_t)n + 2 > sizeof w->todo) {
        cg_fs_warn(CG_O_DIR, CG_R_OPEN, w->path, NULL, ENAMETOOLONG);
        return false;
    }
    memmove(w->todo + n + 1, w->todo, left + 1);    /* "<target>/<rest>" */
    memcpy(w->todo, target, (size_t)n);
    w->todo[n] = '/';
    return target[0] != '/' || walk_root(w);
}

/* Moves w into child comp (made when missing and create). 1: moved (or
 * followed a link); 0: missing and !create; -1: refused (warned). */
static int step(walk *w, const char *comp, bool create)
{
    if (!parent_ok(w))
        return -1;
    int fd = openat(w->fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        if (!create)
            return 0;
        if (mkdirat(w->fd, comp, 0700) && errno != EEXIST) {
            cg_fs_warn(CG_O_DIR, CG_R_CREATE, w->path, NULL, errno);
            return -1;
        }
        fd = openat(w->fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
        struct stat lst;
        if (!fstatat(w->fd, comp, &lst, AT_SYMLINK_NOFOLLOW) && S_ISLNK(lst.st_mode))
            return follow_link(w, comp, &lst) ? 1 : -1;
        cg_fs_warn(CG_O_DIR, create ? CG_R_CREATE : CG_R_NOTDIR, w->path, NULL, create ? ENOTDIR : 0);
        return -1;
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        cg_fs_warn(CG_O_DIR, CG_R_OPEN, w->path, NULL, errno);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t len = strlen(w->cur);
    if (!strcmp(comp, "..")) {
        char *slash = strrchr(w->cur, '/');
        slash[slash == w->cur] = 0;         /* "/a/b" -> "/a", "/a" -> "/" */
    } else if (len + strlen(comp) + 2 <= sizeof w->cur) {
        snprintf(w->cur + len, sizeof w->cur - len, "%s%s", len > 1 ? "/" : "", comp);
    }
    close(w->fd);
    w->fd = fd;
    w->st = st;
    return 1;
}

/* Walks path; 1 with w->fd the directory (not yet checked as the cache
 * directory), 0 when missing and !create, -1 when refused. */
static int walk_path(walk *w, const char *path, bool create)
{
    w->path = path;
    w->fd = -1;
    w->links = 0;
    w->todo[0] = 0;
    if (path[0] != '/' && !getcwd(w->todo, PATH_MAX)) {
        cg_fs_warn(CG_O_DIR, CG_R_OPEN, path, NULL, errno);
        return -1;
    }
    size_t len = strlen(w->todo);
    if (len + strlen(path) + 2 > sizeof w->todo) {
        cg_fs_warn(CG_O_DIR, CG_R_OPEN, path, NULL, ENAMETOOLONG);
        return -1;
    }
    snprintf(w->todo + len, sizeof w->todo - len, "/%s", path);
    if (!walk_root(w))
        return -1;
    char comp[NAME_MAX + 1];
    while (next_component(w, comp)) {
        int r = strcmp(comp, ".") ? step(w, comp, create) : 1;
        if (r <= 0) {
            close(w->fd);
            return r;
        }
    }
    return 1;
}

/* ---- the key ------------------------------------------------------------------------ */

static bool random_bytes(uint8_t *buf, size_t n)
{
    while (n) {
        ssize_t r = getrandom(buf, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {                     /* ENOSYS on an old kernel */
            int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
            bool ok = fd >= 0 && cg_read_all(fd, buf, n);
            if (fd >= 0)
                close(fd);
            return ok;
        }
        buf += r, n -= (size_t)r;
    }
    return true;
}

/* Makes the key file in dfd: random bytes in an exclusive 0600 temp file,
 * linked to its name only when no key exists (another process may have just
 * made one: then that one is used). 0, or -1 with errno. */
static int key_create(int dfd)
{
    uint8_t key[CG_KEY_BYTES];
    char tmp[64];
    if (!random_bytes(key, sizeof key))
        return -1;
    tmp_name(tmp, sizeof tmp, "key");
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    bool ok = !fchmod(fd, 0600) && write_all(fd, key, sizeof key) && !fsync(fd);
    explicit_bzero(key, sizeof key);
    if (close(fd) && ok)
        ok = false;
    if (ok && linkat(dfd, tmp, dfd, CG_KEY_FILE, 0) && errno != EEXIST)
        ok = false;
    int err = errno;
    unlinkat(dfd, tmp, 0);
    errno = err;
    return ok ? 0 : -1;
}

/* Reads the key of the directory dfd into key, making it first if create.
 * 1: loaded; 0: there is none and !create; -1: refused (warned). */
static int key_load(int dfd, const char *path, bool create, uint8_t key[CG_KEY_BYTES])
{
    for (int attempt = 0;; attempt++) {
        int fd = openat(dfd, CG_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && attempt == 0) {
            if (!create)
                return 0;
            if (!key_create(dfd))
                continue;
            cg_fs_warn(CG_O_KEY, CG_R_CREATE, path, CG_KEY_FILE, errno);
            return -1;
        }
        if (fd < 0) {
            cg_fs_warn(CG_O_KEY, errno == ELOOP ? CG_R_SYMLINK : CG_R_OPEN, path, CG_KEY_FILE,
                       errno == ELOOP ? 0 : errno);
            return -1;
        }
        struct stat st;
        cg_fs_reason why = fstat(fd, &st) ? CG_R_OPEN : file_check(&st);
        if (!why && (st.st_size != CG_KEY_BYTES || !cg_read_all(fd, key, CG_KEY_BYTES)))
            why = CG_R_SIZE;
        close(fd);
        if (why)
            cg_fs_warn(CG_O_KEY, why, path, CG_KEY_FILE, 0);
        return why ? -1 : 1;
    }
}

/* ---- the directory ------------------------------------------------------------------ */

/* Removes temp files (".*.tmp") older than CG_STALE_TMP_SECONDS: left by a
 * writer that was killed between creating and renaming them. */
static void sweep_stale(int dfd)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    time_t old = time(NULL) - CG_STALE_TMP_SECONDS;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        struct stat st;
        if (n > 5 && e->d_name[0] == '.' && !strcmp(e->d_name + n - 4, ".tmp") &&
            !fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode) &&
            st.st_mtime < old)
            unlinkat(dfd, e->d_name, 0);
    }
    closedir(d);
}

/* Whether st may be the cache directory; warns when not. */
static bool dir_ok(const struct stat *st, const char *path)
{
    cg_fs_reason why = !S_ISDIR(st->st_mode)      ? CG_R_NOTDIR
                       : st->st_uid != geteuid()  ? CG_R_OWNER
                       : (st->st_mode & 022)      ? CG_R_WRITABLE
                                                  : CG_R_NONE;
    if (why)
        cg_fs_warn(CG_O_DIR, why, path, NULL, 0);
    return !why;
}

int cg_dir_open(const char *path, bool create, cg_dir **out)
{
    *out = NULL;
    walk *w = malloc(sizeof *w);
    if (!w) {
        cg_fs_warn(CG_O_DIR, CG_R_OPEN, path, NULL, ENOMEM);
        return -1;
    }
    int r = walk_path(w, path, create);
    int fd = -1;
    if (r > 0) {
        /* "." of the walked fd: the same directory, now readable. */
        fd = openat(w->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            cg_fs_warn(CG_O_DIR, CG_R_OPEN, path, NULL, errno);
        close(w->fd);
        r = fd < 0 || !dir_ok(&w->st, path) ? -1 : 1;
    }
    free(w);
    cg_dir *d = r > 0 ? calloc(1, sizeof *d) : NULL;
    if (r > 0 && !d) {
        cg_fs_warn(CG_O_DIR, CG_R_OPEN, path, NULL, ENOMEM);
        r = -1;
    }
    if (r > 0) {
        d->fd = fd;
        d->refs = 1;
        sweep_stale(fd);
        r = key_load(fd, path, create, d->key);
    }
    if (r <= 0) {
        if (fd >= 0)
            close(fd);
        free(d);
        return r;
    }
    *out = d;
    return 1;
}

int cg_dir_recheck(const cg_dir *d, const char *path)
{
    struct stat st;
    if (fstat(d->fd, &st) || st.st_nlink == 0)
        return 0;
    return dir_ok(&st, path) ? 1 : -1;
}

void cg_dir_close(cg_dir *d)
{
    if (!d)
        return;
    close(d->fd);
    explicit_bzero(d->key, sizeof d->key);
    free(d);
}

/* ---- entries ------------------------------------------------------------------------ */

int cg_entry_open(const cg_dir *d, const char *name, struct stat *st, cg_fs_reason *why)
{
    /* O_NONBLOCK: a FIFO planted under the name must not hang us; fstat
     * rejects it next. */
    int fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        *why = err == ENOENT ? CG_R_NONE : err == ELOOP ? CG_R_SYMLINK : CG_R_OPEN;
        if (*why && fstatat(d->fd, name, st, AT_SYMLINK_NOFOLLOW))
            *why = CG_R_NONE;                /* gone meanwhile */
        return -1;
    }
    *why = fstat(fd, st) ? CG_R_OPEN : file_check(st);
    if (*why) {
        close(fd);
        return -1;
    }
    return fd;
}

void cg_entry_remove(const cg_dir *d, const char *name, const struct stat *bad)
{
    struct stat now;
    if (!fstatat(d->fd, name, &now, AT_SYMLINK_NOFOLLOW) && now.st_dev == bad->st_dev &&
        now.st_ino == bad->st_ino)
        unlinkat(d->fd, name, 0);
}

int cg_entry_write(const cg_dir *d, const char *name, const void *a, size_t na, const void *b,
                   size_t nb, bool sync)
{
    char tmp[NAME_MAX + 1];
    tmp_name(tmp, sizeof tmp, name);
    int fd = openat(d->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    /* fchmod: a umask must not leave it 0400, which a reader would refuse. */
    bool ok = !fchmod(fd, 0600) && write_all(fd, a, na) && write_all(fd, b, nb) && (!sync || !fsync(fd));
    if (!ok)
        close_keep_errno(fd);
    else if (close(fd))
        ok = false;
    if (ok && !renameat(d->fd, tmp, d->fd, name))
        return 0;
    int err = errno;
    unlinkat(d->fd, tmp, 0);
    errno = err;
    return -1;
}
