/* test_opinfo.c - OpInfo-style samples of every row of ir/ops.def against
 * PyTorch, eager and compiled.
 *
 * tests/golden/opinfo/cases.txt (scripts/golden/opinfo.py, which describes
 * the format) holds, per op, its tolerance and its samples: plain, every
 * dtype, promotion, broadcast, extreme values, empty and 0-dim tensors,
 * tensor-scalar and scalar-tensor forms, sliced, transposed and expanded
 * views (made here from a base tensor with tu_view) and the op's arguments.
 * Each sample runs through fe_apply, the one path of every public entry
 * point (so no op list is written here again): eagerly, then as a one-op
 * model under tj_compile/tj_call. Both must give PyTorch's dtype, shape and
 * values within the op's tolerance (NaN meets NaN, infinities exact), or
 * fail with a message naming the op where PyTorch raises; compiled must also
 * equal eager within the op's compiled bound.
 *
 * tests/golden/opinfo/known.txt lists, in one place, where tjit deliberately
 * differs from PyTorch, and the rows that have no samples and why (docs/ops.md
 * shows both). A row with no samples and no entry there fails the test, so
 * does a mismatch that no entry names. The summary line gives the counts:
 * "opinfo: N samples, eager N passed, compiled N passed, N known differences
 * (N eager, N compiled)"; eager passed + known eager = samples, and so for
 * compiled.
 * TJ_OPINFO=<op> runs one op's samples, TJ_OPINFO_VERBOSE=1 prints every
 * known difference met. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../frontend/fe.h"
#include "util.h"

#define MAX_IN 8

/* ---- the table -------------------------------------------------------------------------- */

typedef struct tol {
    double rtol32, rtol64, atol, ce;
} tol;

typedef struct sample {
    char line[1024];           /* as read, for messages and known-difference patterns */
    ir_op op;
    char tags[96], attrs[256], result[64];
    int nin;
    char in[MAX_IN][64];
} sample;

typedef struct known {
    char op[48], mode[16], pattern[128], reason[256];
    int met;
} known;

static tol tols[IR_NUM_OPS];
static bool has_tol[IR_NUM_OPS];
static int per_op[IR_NUM_OPS];
static known knowns[128];
static int nknown;

static void read_known(void)
{
    const char *dir = getenv("TJ_GOLDEN_DIR");
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/opinfo/known.txt", dir ? dir : "tests/golden");
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        known *k = &knowns[nknown];
        int at = 0;
        if (nknown == (int)(sizeof knowns / sizeof *knowns) ||
            sscanf(line, "%47s %15s %127s %n", k->op, k->mode, k->pattern, &at) != 3 || !at)
            fail_msg("bad line in %s: %s", path, line);
        snprintf(k->reason, sizeof k->reason, "%s", line + at);
        k->reason[strcspn(k->reason, "\n")] = '\0';
        if (strcmp(k->mode, "exempt") && ir_op_from_name(k->op) == IR_NUM_OPS)
            fail_msg("known.txt names an unknown op: %s", line);
        nknown++;
    }
    fclose(f);
}

/* Whether every '&'-separated part of pattern ("*": any) is in the line. */
static bool pattern_matches(const char *pattern, const char *line)
{
    if (!strcmp(pattern, "*"))
        return true;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", pattern);
    for (char *save = NULL, *p = strtok_r(buf, "&", &save); p; p = strtok_r(NULL, "&", &save))
        if (!strstr(line, p))
            return false;
    return true;
}

/* The known difference of this sample in this mode ("eager", "compiled"). */
static known *known_for(const sample *s, const char *mode)
{
    for (int k = 0; k < nknown; k++)
        if (!strcmp(knowns[k].op, ir_ops[s->op].name) &&
            (!strcmp(knowns[k].mode, "both") || !strcmp(knowns[k].mode, mode)) &&
            pattern_matches(knowns[k].pattern, s->line))
            return &knowns[k];
    return NULL;
}

static bool exempt(int op)
{
    for (int k = 0; k < nknown; k++)
        if (!strcmp(knowns[k].mode, "exempt") && !strcmp(knowns[k].op, ir_ops[op].name))
            return true;
    return false;
}

/* ---- inputs and attributes ---------------------------------------------------------------- */

static tj_dtype dtype_of(const char *name)
{
    tj_dtype dt = ir_dtype_from_name(name);
    if (dt == TJ_NUM_DTYPES)
        fail_msg("unknown dtype %s", name);
    return dt;
}

/* A long input that cases.txt does not store (offset "r"): element i is
 * ((i * 7919) % 257) / 64 - 1, as scripts/golden/opinfo.py's ramp(). */
static tj_tensor *ramp(const char *shape)
{
    int64_t dims[TJ_MAX_DIMS], n = 1;
    int nd = tu_parse_ints(shape, dims);
    for (int d = 0; d < nd; d++)
        n *= dims[d];
    tj_tensor *i = tj_arange(TJ_F64, 0, (double)n, 1);
    return tj_reshape(tj_sub_s(tj_div_s(tj_fmod_s(tj_mul_s(i, 7919), 257), 64), 1), nd, dims);
}

/* t:<dtype>:<shape>:<off>:<view> -> the tensor, a fresh buffer then the view. */
static tj_tensor *tensor_input(const char *spec, tj_tensor *pool)
{
    char dt[8], shape[32], off[24], view;
    if (sscanf(spec, "t:%7[^:]:%31[^:]:%23[^:]:%c", dt, shape, off, &view) != 4)
        fail_msg("bad input %s", spec);
    tj_tensor *base = off[0] == 'r' ? ramp(shape) : tu_golden_part(pool, atol(off), shape);
    return tu_view(tj_clone(tj_cast(base, dtype_of(dt))), view);
}

static void parse_ints(const char *s, ir_attr *a)
{
    a->n = 0;
    for (const char *p = s + 1; *p && *p != ']';) {
        char *end;
        a->i[a->n++] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
        if (a->n == IR_MAX_LIST)
            break;
    }
}

/* name=value;... in the row's schema order -> attributes. */
static void parse_attrs(ir_op op, const char *text, ir_attrs *at)
{
    memset(at, 0, sizeof *at);
    if (!strcmp(text, "-"))
        return;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    int k = 0;
    for (char *save = NULL, *p = strtok_r(buf, ";", &save); p; p = strtok_r(NULL, ";", &save), k++) {
        char *v = strchr(p, '=');
        if (!v || k >= ir_ops[op].nattrs || strncmp(p, ir_ops[op].attrs[k].name, (size_t)(v - p)))
            fail_msg("%s: attribute %s is not the schema's", ir_ops[op].name, p);
        v++;
        switch (ir_ops[op].attrs[k].kind) {
        case IR_ATTR_INTS: parse_ints(v, &at->a[k]); break;
        case IR_ATTR_FLOAT: ir_attr_float(&at->a[k], strtod(v, NULL)); break;
        case IR_ATTR_DTYPE: ir_attr_int(&at->a[k], dtype_of(v)); break;
        case IR_ATTR_REDUCTION:
        case IR_ATTR_ROUNDING:
        case IR_ATTR_REDUCE_OP:
            ir_attr_int(&at->a[k], ir_attr_word_value(ir_ops[op].attrs[k].kind, v, strlen(v)));
            break;
        default: ir_attr_int(&at->a[k], strtoll(v, NULL, 10)); break;
        }
    }
}

/* Applies the sample's op to its inputs: tensors from args in order,
 * scalars wrapped as the _s entry points wrap them (lerp's weight as
 * tj_lerp_s does, with no tensor to follow). */
static tj_tensor *apply(const sample *s, tj_tensor *const *args)
{
    tj_tensor *in[MAX_IN] = {0}, *like = NULL;
    int nt = 0, nin = 0;
    for (int k = 0; k < s->nin; k++)
        if (s->in[k][0] == 't' && !like)
            like = args[0];
    for (int k = 0; k < s->nin; k++) {
        if (s->in[k][0] == 't')
            in[k] = args[nt++];
        else if (s->in[k][0] == 's')
            in[k] = fe_wrap_scalar(strtod(s->in[k] + 2, NULL), s->op == OP_lerp ? NULL : like);
        if (s->in[k][0] != '-')
            nin = k + 1;
    }
    ir_attrs at;
    parse_attrs(s->op, s->attrs, &at);
    return fe_apply(s->op, in, nin, &at);
}

static tj_tensor *model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    return apply(ctx, args);
}

/* ---- comparison --------------------------------------------------------------------------- */

static bool close_enough(double a, double b, double rtol, double atol)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    return fabs(a - b) <= atol + rtol * fabs(b);
}

/* Whether got has want's shape and values; why not in msg. */
static bool values_match(tj_tensor *got, tj_tensor *want, double rtol, double atol, char *msg,
                         size_t n)
{
    if (tj_ndim(got) != tj_ndim(want) ||
        memcmp(tj_shape(got), tj_shape(want), sizeof(int64_t) * (size_t)tj_ndim(got))) {
        snprintf(msg, n, "shape differs");
        return false;
    }
    tj_tensor *g = tj_contiguous(tj_cast(got, TJ_F64)), *w = tj_contiguous(tj_cast(want, TJ_F64));
    const double *gv = tj_data(g), *wv = tj_data(w);
    for (int64_t i = 0; i < tj_numel(want); i++)
        if (!close_enough(gv[i], wv[i], rtol, atol)) {
            snprintf(msg, n, "value [%ld] is %.9g, want %.9g", (long)i, gv[i], wv[i]);
            return false;
        }
    return true;
}

static const char *shape_name(tj_tensor *t, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < tj_ndim(t) && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%ld", d ? "," : "", (long)tj_shape(t)[d]);
    snprintf(buf + (k < n ? k : n - 1), n - (k < n ? k : n - 1), "]");
    return buf;
}

/* got (NULL: failed) against PyTorch's result: NULL when it agrees, else why not. */
static const char *check(const sample *s, tj_tensor *got, tj_tensor *pool_want, char *msg,
                         size_t n)
{
    const tol *t = &tols[s->op];
    if (!strcmp(s->result, "err")) {
        if (got)
            return snprintf(msg, n, "PyTorch raises, tjit gives %s%s",
                            tj_dtype_name(tj_dtype_of(got)), shape_name(got, (char[64]){0}, 64)),
                   msg;
        if (!strstr(tj_last_error(), ir_ops[s->op].name))
            return snprintf(msg, n, "the message \"%s\" does not name the op", tj_last_error()), msg;
        return NULL;
    }
    if (!got)
        return snprintf(msg, n, "fails: %s", tj_last_error()), msg;
    char dt[8], shape[32];
    long off;
    if (sscanf(s->result, "%7[^:]:%31[^:]:%ld", dt, shape, &off) != 3)
        fail_msg("bad result %s", s->result);
    if (tj_dtype_of(got) != dtype_of(dt))
        return snprintf(msg, n, "dtype %s, PyTorch %s", tj_dtype_name(tj_dtype_of(got)), dt), msg;
    tj_tensor *want = tu_golden_part(pool_want, off, shape);
    bool exact = !tj_dtype_is_float(dtype_of(dt));
    double rtol = exact ? 0 : !strcmp(dt, "f64") ? t->rtol64 : t->rtol32, atol = exact ? 0 : t->atol;
    /* f16, bf16: PyTorch's f64 result rounded once; tjit's f32 formula may
     * land one ulp of the narrow type away (down to its smallest subnormal) */
    if (!strcmp(dt, "f16"))
        rtol = fmax(rtol, 0x1p-10), atol = fmax(atol, 0x1p-24);
    else if (!strcmp(dt, "bf16"))
        rtol = fmax(rtol, 0x1p-7), atol = fmax(atol, 0x1p-133);
    if (!values_match(got, want, rtol, atol, msg, n))
        return msg;
    return NULL;
}

/* ---- running ------------------------------------------------------------------------------ */

typedef struct counts {
    int samples, eager_ok, compiled_ok, known[2], bad;   /* known: eager, compiled */
    int symbolic;   /* samples whose dynamic run kept a symbolic dim */
    int executor;   /* of which the plan runs on the graph executor (no kernels): a
                     * failure (an op that cannot follow them makes the dims static) */
    int grown;      /* runs again at a larger first or last dim */
} counts;

static void report(const sample *s, const char *mode, const char *why, counts *c)
{
    known *k = known_for(s, mode);
    if (k) {
        k->met++;
        c->known[strcmp(mode, "eager") != 0]++;
        if (getenv("TJ_OPINFO_VERBOSE"))
            print_message("known (%s) %s: %s [%s]\n", mode, s->line, why, k->reason);
        return;
    }
    print_error("%s (%s): %s\n", s->line, mode, why);
    c->bad++;
}

/* The sample's dynamic model m with dim d of its first input three larger,
 * and with it the dims of the other inputs that line up with it (right
 * aligned, as broadcasting does) and have its size; new positive values of
 * each input's dtype. Where eager takes the new inputs, m must give eager's
 * result (a graph that baked the traced size into an attribute would not). */
static void grown(const sample *s, tj_compiled *m, tj_tensor *const *args, int nargs, int d, counts *c)
{
    int nd0 = tj_ndim(args[0]);
    int64_t n = tj_size(args[0], d);
    if (n < 2)
        return;
    tj_tensor *big[MAX_IN];
    for (int k = 0; k < nargs; k++) {
        int nd = tj_ndim(args[k]), at = d - (nd0 - nd);
        int64_t shape[TJ_MAX_DIMS];
        memcpy(shape, tj_shape(args[k]), sizeof(int64_t) * (size_t)nd);
        if (at >= 0 && at < nd && shape[at] == n)
            shape[at] += 3;
        /* positive values: a sum of many cancels nothing, so the op's bound
         * on compiled against eager (set for its samples' values) still
         * applies */
        big[k] = tj_cast(tj_add_s(tj_abs(tj_randn(TJ_F32, nd, shape)), 0.25), tj_dtype_of(args[k]));
    }
    tj_tensor *want = apply(s, big);
    tj_clear_error();
    if (!want)
        return;
    char msg[256];
    tj_tensor *got = tj_call(m, big, nargs);
    if (!got) {
        print_error("%s (dynamic, dim %d + 3): %s\n", s->line, d, tj_last_error());
        c->bad++;
    } else if (tj_dtype_of(got) != tj_dtype_of(want) ||
               !values_match(got, want, tols[s->op].ce, tols[s->op].atol, msg, sizeof msg)) {
        print_error("%s (dynamic, dim %d + 3): %s (against eager)\n", s->line, d, msg);
        c->bad++;
    } else {
        c->grown++;
    }
}

static void run_sample(sample *s, tj_tensor *pool_in, tj_tensor *pool_want, counts *c)
{
    tj_tensor *args[MAX_IN];
    int nargs = 0;
    for (int k = 0; k < s->nin; k++)
        if (s->in[k][0] == 't')
            args[nargs++] = tensor_input(s->in[k], pool_in);
    char msg[512];
    tj_tensor *eager = apply(s, args);
    const char *why = check(s, eager, pool_want, msg, sizeof msg);
    if (why)
        report(s, "eager", why, c);
    else
        c->eager_ok++;
    tj_clear_error();

    tj_compiled *m = tj_compile(model, s, &(tj_compile_options){.name = "opinfo"});
    tj_tensor *got = tj_call(m, args, nargs);
    why = check(s, got, pool_want, msg, sizeof msg);
    if (!why && got && eager &&
        !values_match(got, eager, tols[s->op].ce, tols[s->op].atol, msg, sizeof msg))
        why = strcat(msg, " (against eager)");
    if (why) {
        report(s, "compiled", why, c);
    } else {
        c->compiled_ok++;
    }
    tj_compiled_free(m);
    tj_clear_error();
    /* again with every dim marked dynamic: the graph traced with symbolic dims
     * (or static again where an op cannot follow them) must compute what the
     * static one did at these sizes (a rule or a decomposition that computed
     * with a symbol's encoding would not) */
    if (!got)
        return;
    for (int k = 0; k < nargs; k++)
        for (int d = 0; d < tj_ndim(args[k]); d++)
            tj_mark_dynamic(args[k], d);
    m = tj_compile(model, s, &(tj_compile_options){.name = "opinfo_dynamic"});
    tj_tensor *dyn = tj_call(m, args, nargs);
    if (!dyn) {
        print_error("%s (dynamic): %s\n", s->line, tj_last_error());
        c->bad++;
    } else if (tj_dtype_of(dyn) != tj_dtype_of(got) ||
               !values_match(dyn, got, tols[s->op].ce, tols[s->op].atol, msg, sizeof msg)) {
        print_error("%s (dynamic): %s (against the static graph)\n", s->line, msg);
        c->bad++;
    } else {
        char *ex = tj_explain(m);   /* "graph 1: ..., 1 symbolic dim" or "2 symbolic dims" */
        c->symbolic += ex && strstr(ex, "symbolic dim") && !strstr(ex, " 0 symbolic dims");
        const char *exec = ex ? strstr(ex, "graph executor:") : NULL;
        if (exec) {   /* a symbolic graph with no kernels: specialize it instead */
            c->executor++;
            c->bad++;
            print_error("%s (dynamic): %.*s\n", s->line, (int)strcspn(exec, "\n"), exec);
        }
        free(ex);
        for (int d = 0; nargs > 0 && d < tj_ndim(args[0]); d += tj_ndim(args[0]) > 1 ? tj_ndim(args[0]) - 1 : 1)
            grown(s, m, args, nargs, d, c);
    }
    tj_compiled_free(m);
    tj_clear_error();
}

static bool parse_sample(const char *line, sample *s)
{
    char op[48];
    int at = 0;
    memset(s, 0, sizeof *s);
    snprintf(s->line, sizeof s->line, "%s", line);
    s->line[strcspn(s->line, "\n")] = '\0';
    if (sscanf(line, "%47s %95s %255s %63s %n", op, s->tags, s->attrs, s->result, &at) != 4)
        return false;
    if ((s->op = ir_op_from_name(op)) == IR_NUM_OPS)
        fail_msg("cases.txt names an unknown op: %s", line);
    for (const char *p = line + at; s->nin < MAX_IN; s->nin++) {
        int used = 0;
        if (sscanf(p, "%63s %n", s->in[s->nin], &used) != 1)
            break;
        p += used;
    }
    return true;
}

static void read_tol(const char *line)
{
    char op[48];
    tol t;
    if (sscanf(line, "tol %47s %lf %lf %lf %lf", op, &t.rtol32, &t.rtol64, &t.atol, &t.ce) != 5)
        fail_msg("bad tol line: %s", line);
    ir_op o = ir_op_from_name(op);
    if (o == IR_NUM_OPS)
        fail_msg("tol line names an unknown op: %s", line);
    tols[o] = t, has_tol[o] = true;
}

/* docs/ops.md (make docs) must list every line of known.txt: each reason's
 * end (its start may hold a '|' that the table escapes). */
static void check_docs(void)
{
    FILE *f = fopen("docs/ops.md", "rb");
    if (!f)
        fail_msg("cannot open docs/ops.md (run from the repository root)");
    static char doc[1 << 18];
    doc[fread(doc, 1, sizeof doc - 1, f)] = '\0';
    fclose(f);
    for (int k = 0; k < nknown; k++) {
        size_t n = strlen(knowns[k].reason);
        if (!strstr(doc, knowns[k].reason + (n > 40 ? n - 40 : 0)))
            fail_msg("docs/ops.md lacks known.txt's \"%s %s\": run `make docs`", knowns[k].op,
                     knowns[k].pattern);
    }
}

static void test_samples(void **state)
{
    (void)state;
    read_known();
    check_docs();
    FILE *f = tu_golden_cases("opinfo");
    tj_tensor *pool_in = tu_golden("opinfo", "in"), *pool_want = tu_golden("opinfo", "want");
    const char *only = getenv("TJ_OPINFO");
    counts c = {0};
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        if (!strncmp(line, "tol ", 4)) {
            read_tol(line);
            continue;
        }
        sample s;
        if (!parse_sample(line, &s))
            fail_msg("bad line: %s", line);
        if (!has_tol[s.op])
            fail_msg("no tol line before %s", line);
        per_op[s.op]++;
        if (only && strcmp(only, ir_ops[s.op].name))
            continue;
        tj_scope_begin();
        run_sample(&s, pool_in, pool_want, &c);
        tj_scope_end();
        c.samples++;
    }
    fclose(f);
    int missing = 0;
    for (int op = 0; op < IR_NUM_OPS; op++)
        if (!per_op[op] && !exempt(op))
            print_error("%s: a row of ops.def with no samples and no exemption\n", ir_ops[op].name),
                missing++;
        else if (per_op[op] && exempt(op))
            print_error("%s: exempt in known.txt but has samples\n", ir_ops[op].name), missing++;
    for (int k = 0; k < nknown && !only; k++)
        if (!knowns[k].met && strcmp(knowns[k].mode, "exempt"))
            print_message("note: known.txt entry \"%s %s %s\" met no sample\n", knowns[k].op,
                          knowns[k].mode, knowns[k].pattern);
    printf("#summary opinfo: %d samples, eager %d passed, compiled %d passed, %d known "
           "differences (%d eager, %d compiled); %d compiled with symbolic dims as well (%d of "
           "them on the graph executor), %d run again at a larger size\n",
           c.samples, c.eager_ok, c.compiled_ok, c.known[0] + c.known[1], c.known[0], c.known[1],
           c.symbolic, c.executor, c.grown);
    if (missing)
        fail_msg("%d rows of ops.def without samples (above)", missing);
    if (c.bad)
        fail_msg("%d runs differ from PyTorch or from eager (above)", c.bad);
    assert_true(c.samples > (only ? 0 : 3000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_samples, tu_scope_setup, tu_scope_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
