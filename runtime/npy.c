/* npy.c - reading and writing NumPy .npy files (tj_load_npy, tj_save_npy).
 *
 * Format (numpy/lib/format.py): the magic "\x93NUMPY", a major and minor
 * version byte, the header length (uint16 LE for 1.0, uint32 LE for 2.0 and
 * 3.0), then a Python dict literal such as
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a newline, then the raw little-endian data in C order.
 *
 * Loading accepts versions 1.0, 2.0 and 3.0 and the dtypes f32 f64 i32 i64
 * i16 i8 bool u8 f16 ('<f4' '<f8' '<i4' '<i8' '<i2' '|i1' '|b1' '|u1' '<f2')
 * and bf16 as '<u2'. NumPy has no bfloat16: a bf16 tensor is saved as its
 * raw 16 bits, an unsigned 16-bit integer array ('<u2'), and since tjit has
 * no u16 dtype a '<u2' file loads as bf16 (in PyTorch:
 * torch.from_numpy(a.view(numpy.int16)).view(torch.bfloat16), and
 * t.view(torch.int16).numpy().view(numpy.uint16) back). Everything else (Fortran
 * order, big-endian, other dtypes, a malformed or truncated file) fails with a
 * message naming the path. Bytes after the data are ignored. Saving writes
 * version 1.0 in the tensor's logical (row-major) order, any strides.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rt.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_MAX_HEADER (1u << 20)   /* a sane bound; numpy writes < 1 KiB here */

/* ---- dtype mapping ------------------------------------------------------------ */

typedef struct npy_dtype {
    const char *descr;   /* as numpy writes it */
    char kind;
    int size;
    tj_dtype dt;
} npy_dtype;

static const npy_dtype npy_dtypes[] = {
    {"<f4", 'f', 4, TJ_F32}, {"<f8", 'f', 8, TJ_F64}, {"<i4", 'i', 4, TJ_I32},
    {"<i8", 'i', 8, TJ_I64}, {"|b1", 'b', 1, TJ_BOOL}, {"|u1", 'u', 1, TJ_U8},
    {"|i1", 'i', 1, TJ_I8},  {"<i2", 'i', 2, TJ_I16}, {"<f2", 'f', 2, TJ_F16},
    {"<u2", 'u', 2, TJ_BF16},   /* bf16's raw bits: the convention above */
};
#define NPY_NDTYPES (int)(sizeof npy_dtypes / sizeof npy_dtypes[0])

/* Maps a descr to a dtype: byte order '<' (or '=', native little-endian on the
 * hosts we support), or any order for one-byte types. Writes a reason to err. */
static int descr_to_dtype(const char *descr, tj_dtype *dt, char *err, size_t nerr)
{
    size_t len = strlen(descr);
    if (len == 3 && descr[0] == '>' && strchr("fiub", descr[1]) && descr[2] != '1') {
        snprintf(err, nerr, "big-endian dtype '%s' is not supported", descr);
        return -1;
    }
    for (int k = 0; len == 3 && k < NPY_NDTYPES; k++) {
        const npy_dtype *d = &npy_dtypes[k];
        bool order_ok = d->size == 1 ? strchr("<>|=", descr[0]) != NULL
                                     : descr[0] == '<' || descr[0] == '=';
        if (order_ok && descr[1] == d->kind && descr[2] - '0' == d->size) {
            *dt = d->dt;
            return 0;
        }
    }
    snprintf(err, nerr,
             "unsupported dtype '%s' (supported: <f4 <f8 <i4 <i8 <i2 |i1 |b1 |u1 <f2, <u2 as bf16)", descr);
    return -1;
}

static const char *dtype_to_descr(tj_dtype dt)
{
    for (int k = 0; k < NPY_NDTYPES; k++)
        if (npy_dtypes[k].dt == dt)
            return npy_dtypes[k].descr;
    return NULL;
}

/* ---- header parsing ---------------------------------------------------------- */

/* A parsed header. descr is a bounded copy; a longer descr is unsupported anyway. */
typedef struct npy_header {
    char descr[32];
    bool fortran;
    int ndim;
    int64_t shape[TJ_MAX_DIMS];
    unsigned seen;   /* bit 0 descr, 1 fortran_order, 2 shape */
} npy_header;

typedef struct parser {
    const char *p, *end;
    char *err;
    size_t nerr;
} parser;

static int parse_fail(parser *ps, const char *what)
{
    if (!ps->err[0])
        snprintf(ps->err, ps->nerr, "malformed header: %s", what);
    return -1;
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && strchr(" \t\r\n", *ps->p) && *ps->p)
        ps->p++;
}

static bool eat(parser *ps, char c)
{
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return true;
    }
    return false;
}

static bool eat_word(parser *ps, const char *w)
{
    size_t n = strlen(w);
    skip_ws(ps);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, w, n) == 0) {
        ps->p += n;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes into out (truncated to n-1). */
static int parse_string(parser *ps, char *out, size_t n)
{
    skip_ws(ps);
    if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"'))
        return parse_fail(ps, "expected a quoted string");
    char q = *ps->p++;
    size_t k = 0;
    while (ps->p < ps->end && *ps->p != q) {
        if (*ps->p == '\\' || *ps->p == '\n')
            return parse_fail(ps, "unsupported character in a string");
        if (k + 1 < n)
            out[k++] = *ps->p;
        ps->p++;
    }
    if (ps->p >= ps->end)
        return parse_fail(ps, "unterminated string");
    ps->p++;
    out[k] = '\0';
    return 0;
}

static int parse_int(parser *ps, int64_t *v)
{
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
        return parse_fail(ps, "expected a non-negative integer in the shape");
    int64_t x = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *ps->p - '0', &x)) {
            snprintf(ps->err, ps->nerr, "shape has a dimension that overflows int64");
            return -1;
        }
        ps->p++;
    }
    eat_word(ps, "L");   /* Python 2 long suffix, still accepted by numpy */
    *v = x;
    return 0;
}

/* "(3, 4)", "(3,)", "()" */
static int parse_shape(parser *ps, npy_header *h)
{
    if (!eat(ps, '('))
        return parse_fail(ps, "shape is not a tuple");
    h->ndim = 0;
    while (!eat(ps, ')')) {
        if (h->ndim == TJ_MAX_DIMS) {
            snprintf(ps->err, ps->nerr, "shape has more than %d dims", TJ_MAX_DIMS);
            return -1;
        }
        if (parse_int(ps, &h->shape[h->ndim++]))
            return -1;
        if (!eat(ps, ',')) {
            if (!eat(ps, ')'))
                return parse_fail(ps, "expected ',' or ')' in the shape");
            if (h->ndim == 1)
                return parse_fail(ps, "a one-element shape needs a trailing comma");
            break;
        }
    }
    return 0;
}

static int parse_entry(parser *ps, npy_header *h)
{
    char key[32];
    if (parse_string(ps, key, sizeof key))
        return -1;
    if (!eat(ps, ':'))
        return parse_fail(ps, "expected ':' after a key");
    if (strcmp(key, "descr") == 0) {
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == '[') {
            snprintf(ps->err, ps->nerr, "unsupported dtype (structured arrays are not supported)");
            return -1;
        }
        if (parse_string(ps, h->descr, sizeof h->descr))
            return -1;
        h->seen |= 1;
    } else if (strcmp(key, "fortran_order") == 0) {
        if (eat_word(ps, "True"))
            h->fortran = true;
        else if (eat_word(ps, "False"))
            h->fortran = false;
        else
            return parse_fail(ps, "fortran_order is not True or False");
        h->seen |= 2;
    } else if (strcmp(key, "shape") == 0) {
        if (parse_shape(ps, h))
            return -1;
        h->seen |= 4;
    } else {
        snprintf(ps->err, ps->nerr, "malformed header: unexpected key '%s'", key);
        return -1;
    }
    return 0;
}

static int parse_header(const char *text, size_t len, npy_header *h, char *err, size_t nerr)
{
    parser ps = {text, text + len, err, nerr};
    memset(h, 0, sizeof *h);
    err[0] = '\0';
    if (!eat(&ps, '{'))
        return parse_fail(&ps, "does not start with '{'");
    while (!eat(&ps, '}')) {
        if (parse_entry(&ps, h))
            return -1;
        if (!eat(&ps, ',')) {
            if (!eat(&ps, '}'))
                return parse_fail(&ps, "expected ',' or '}'");
            break;
        }
    }
    skip_ws(&ps);
    if (ps.p != ps.end)
        return parse_fail(&ps, "unexpected text after the dict");
    if (h->seen != 7)
        return parse_fail(&ps, !(h->seen & 1)   ? "missing 'descr'"
                               : !(h->seen & 2) ? "missing 'fortran_order'"
                                                : "missing 'shape'");
    return 0;
}

/* ---- loading ----------------------------------------------------------------------- */

/* Reads the preamble and header text; returns the malloc'ed text and its length. */
static char *read_header(FILE *f, size_t *len, char *err, size_t nerr)
{
    unsigned char pre[NPY_MAGIC_LEN + 2];
    if (fread(pre, 1, sizeof pre, f) != sizeof pre ||
        memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
        snprintf(err, nerr, "not an .npy file (bad magic)");
        return NULL;
    }
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0) {
        snprintf(err, nerr, "unsupported .npy format version %d.%d", major, minor);
        return NULL;
    }
    unsigned char lb[4] = {0};
    size_t nlen = major == 1 ? 2 : 4;
    if (fread(lb, 1, nlen, f) != nlen) {
        snprintf(err, nerr, "truncated header");
        return NULL;
    }
    uint32_t hl = lb[0] | (uint32_t)lb[1] << 8 | (uint32_t)lb[2] << 16 | (uint32_t)lb[3] << 24;
    if (hl > NPY_MAX_HEADER) {
        snprintf(err, nerr, "malformed header: length %u is too large", hl);
        return NULL;
    }
    char *text = malloc(hl + 1);
    if (!text) {
        snprintf(err, nerr, "out of memory reading the header");
        return NULL;
    }
    if (fread(text, 1, hl, f) != hl) {
        snprintf(err, nerr, "truncated header");
        free(text);
        return NULL;
    }
    text[hl] = '\0';
    *len = hl;
    return text;
}

/* Checks the header against our support and computes the data size. */
static int check_header(const npy_header *h, tj_dtype *dt, size_t *nbytes, char *err,
                        size_t nerr)
{
    if (descr_to_dtype(h->descr, dt, err, nerr))
        return -1;
    if (h->fortran) {
        snprintf(err, nerr, "fortran_order True is not supported");
        return -1;
    }
    size_t n = tj_dtype_size(*dt);
    for (int d = 0; d < h->ndim; d++) {
        if (__builtin_mul_overflow(n, (uint64_t)h->shape[d], &n) || n > (size_t)INT64_MAX) {
            snprintf(err, nerr, "shape product overflows");
            return -1;
        }
    }
    *nbytes = n;
    return 0;
}

/* Reads the data into a fresh tensor (not owned by a scope); NULL on failure
 * with err set (or the runtime error set when allocation failed). */
static tj_tensor *read_data(FILE *f, const npy_header *h, tj_dtype dt, size_t nbytes,
                            char *err, size_t nerr)
{
    struct stat st;
    long pos = ftell(f);
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && pos >= 0 &&
        (uint64_t)(st.st_size - pos) < nbytes) {
        /* Checked before allocating so a corrupt shape cannot claim huge memory. */
        snprintf(err, nerr, "truncated data: expected %zu bytes, the file has %lld", nbytes,
                 (long long)(st.st_size - pos));
        return NULL;
    }
    tj_tensor *t = rt_tensor_new(dt, h->ndim, h->shape);
    if (!t)
        return NULL;
    size_t got = fread(t->storage->data, 1, nbytes, f);
    if (got != nbytes) {
        snprintf(err, nerr, "truncated data: expected %zu bytes, got %zu", nbytes, got);
        tj_release(t);
        return NULL;
    }
    if (dt == TJ_BOOL) {   /* normalize so every true is 1 */
        uint8_t *b = t->storage->data;
        for (size_t k = 0; k < nbytes; k++)
            b[k] = b[k] != 0;
    }
    return t;
}

tj_tensor *tj_load_npy(const char *path)
{
    if (!path) {
        rt_error("load_npy: path is NULL");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        rt_error("load_npy: cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        rt_error("load_npy: cannot open '%s': it is a directory", path);
        fclose(f);
        return NULL;
    }
    char err[256] = "";
    size_t hlen = 0, nbytes = 0;
    npy_header h;
    tj_dtype dt = TJ_F32;
    tj_tensor *t = NULL;
    char *text = read_header(f, &hlen, err, sizeof err);
    if (text && parse_header(text, hlen, &h, err, sizeof err) == 0 &&
        check_header(&h, &dt, &nbytes, err, sizeof err) == 0)
        t = read_data(f, &h, dt, nbytes, err, sizeof err);
    free(text);
    fclose(f);
    if (!t) {
        if (!err[0])   /* allocation failed: keep its message, add the path */
            snprintf(err, sizeof err, "%s", tj_last_error());
        rt_error("load_npy: '%s': %s", path, err);
        return NULL;
    }
    return rt_own(t);
}

/* ---- saving ---------------------------------------------------------------------------- */

/* The full preamble + header, padded so the data starts at a multiple of 64. */
static size_t make_header(const tj_tensor *t, const char *descr, char *buf, size_t n)
{
    char shape[TJ_MAX_DIMS * 24 + 4];
    size_t k = (size_t)snprintf(shape, sizeof shape, "(");
    for (int d = 0; d < t->ndim; d++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld", d ? ", " : "",
                              (long long)t->shape[d]);
    snprintf(shape + k, sizeof shape - k, t->ndim == 1 ? ",)" : ")");
    char dict[sizeof shape + 96];
    int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                      descr, shape);
    size_t total = (NPY_MAGIC_LEN + 4 + (size_t)dl + 1 + 63) / 64 * 64;
    size_t hl = total - NPY_MAGIC_LEN - 4;
    if (total > n)
        return 0;
    memcpy(buf, NPY_MAGIC "\x01\x00", NPY_MAGIC_LEN + 2);
    buf[8] = (char)(hl & 0xff);
    buf[9] = (char)(hl >> 8);
    memcpy(buf + 10, dict, (size_t)dl);
    memset(buf + 10 + dl, ' ', hl - (size_t)dl - 1);
    buf[total - 1] = '\n';
    return total;
}

/* Writes t's elements in row-major order of its shape, any strides. */
static bool write_strided(const tj_tensor *t, FILE *f)
{
    size_t es = tj_dtype_size(t->dtype);
    int nd = t->ndim;
    int64_t inner = t->shape[nd - 1], istride = t->strides[nd - 1];
    int64_t idx[TJ_MAX_DIMS] = {0};
    char buf[1 << 14];
    size_t used = 0;
    const char *base = t->storage->data;
    for (;;) {
        int64_t off = t->offset;
        for (int d = 0; d < nd - 1; d++)
            off += idx[d] * t->strides[d];
        for (int64_t i = 0; i < inner; i++) {
            if (used + es > sizeof buf) {
                if (fwrite(buf, 1, used, f) != used)
                    return false;
                used = 0;
            }
            memcpy(buf + used, base + (off + i * istride) * (int64_t)es, es);
            used += es;
        }
        int d = nd - 2;
        while (d >= 0 && ++idx[d] == t->shape[d])
            idx[d--] = 0;
        if (d < 0)
            break;
    }
    return fwrite(buf, 1, used, f) == used;
}

static bool write_data(const tj_tensor *t, FILE *f)
{
    int64_t numel = rt_numel(t);
    if (numel == 0)
        return true;
    if (t->ndim == 0 || rt_is_contiguous(t)) {
        size_t nbytes = (size_t)numel * tj_dtype_size(t->dtype);
        return fwrite(rt_ptr(t), 1, nbytes, f) == nbytes;
    }
    return write_strided(t, f);
}

int tj_save_npy(tj_tensor *t, const char *path)
{
    if (!t) {   /* the error that made t NULL stays; with none, one of our own */
        if (!rt_has_error())
            rt_error("save_npy: the tensor is NULL");
        return -1;
    }
    if (rt_check_live(&t, 1, "save_npy") != 0)
        return -1;
    if (!path) {
        rt_error("save_npy: path is NULL");
        return -1;
    }
    char b[96];
    const char *descr = dtype_to_descr(t->dtype);
    if (!descr) {
        rt_error("save_npy: '%s': dtype %s cannot be saved", path, tj_dtype_name(t->dtype));
        return -1;
    }
    if (!t->storage) {
        rt_error("save_npy: '%s': the tensor %s is symbolic (being traced)", path,
                 tj_describe(t, b, sizeof b));
        return -1;
    }
    char header[512];
    size_t hl = make_header(t, descr, header, sizeof header);
    FILE *f = fopen(path, "wb");
    if (!f) {
        rt_error("save_npy: cannot open '%s' for writing: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    bool regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    errno = 0;
    bool ok = hl && fwrite(header, 1, hl, f) == hl && write_data(t, f);
    int saved_errno = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved_errno = errno;
    }
    if (!ok) {
        rt_error("save_npy: writing '%s' failed: %s", path,
                 strerror(saved_errno ? saved_errno : EIO));
        if (regular)   /* never a device or pipe the caller named */
            remove(path);
        return -1;
    }
    return 0;
}
