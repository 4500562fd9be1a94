/* reductions.c - reductions the benchmark suite does not exercise, eager
 * against compiled: a whole-tensor sum (split_reductions splits it so both
 * threads work), a sum over dim 0 (a column kernel), and a sum over the last
 * dim (a rows kernel), each of x * x so the producer fuses. Prints the median
 * ms of each path and the kernels per call; exits 1 when compiled and eager
 * differ by more than 1e-4 relative.
 *
 *   make build/examples/reductions && ./build/examples/reductions
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tjit.h>

enum { ITERS = 41 };

static tj_tensor *sum_all(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx, (void)n;
    return tj_sum(tj_mul(a[0], a[0]), NULL, 0, false);
}

static tj_tensor *sum_dim0(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx, (void)n;
    return tj_sum(tj_mul(a[0], a[0]), (int[]){0}, 1, false);
}

static tj_tensor *sum_dim1(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx, (void)n;
    return tj_sum(tj_mul(a[0], a[0]), (int[]){1}, 1, false);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median ms of one call of fn (c == NULL) or of c. */
static double median_ms(tj_model_fn fn, tj_compiled *c, tj_tensor *x)
{
    double t[ITERS];
    for (int i = 0; i < ITERS; i++) {
        tj_scope_begin();
        double t0 = now_ms();
        tj_tensor *y = c ? tj_call(c, &x, 1) : fn(NULL, &x, 1);
        t[i] = now_ms() - t0;
        tj_scope_end();
        if (!y) {
            fprintf(stderr, "reductions: %s\n", tj_last_error());
            exit(1);
        }
    }
    qsort(t, ITERS, sizeof *t, cmp);
    return t[ITERS / 2];
}

/* Largest |compiled - eager| relative to max |eager|. */
static double rel_diff(tj_model_fn fn, tj_compiled *c, tj_tensor *x)
{
    tj_scope_begin();
    tj_tensor *a = fn(NULL, &x, 1), *b = tj_call(c, &x, 1);
    const float *pa = tj_data(a), *pb = tj_data(b);
    double d = 0, m = 0;
    for (int64_t i = 0; i < tj_numel(a); i++) {
        d = fmax(d, fabs((double)pa[i] - pb[i]));
        m = fmax(m, fabs((double)pa[i]));
    }
    tj_scope_end();
    return d / (m > 0 ? m : 1);
}

int main(void)
{
    tj_tensor *x1 = tj_randn(TJ_F32, 1, (int64_t[]){1 << 22});
    tj_tensor *x2 = tj_randn(TJ_F32, 2, (int64_t[]){4096, 1024});
    struct {
        const char *what;
        tj_model_fn fn;
        tj_tensor *x;
    } cases[] = {
        {"sum(x*x), x f32[4194304]", sum_all, x1},
        {"sum(x*x, dims=[0]), x f32[4096,1024]", sum_dim0, x2},
        {"sum(x*x, dims=[1]), x f32[4096,1024]", sum_dim1, x2},
    };
    int bad = 0;
    printf("%-40s %9s %9s %8s %s\n", "graph", "eager ms", "comp ms", "speedup", "kernels+eager calls");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tj_compiled *c = tj_compile(cases[i].fn, NULL, NULL);
        double rd = rel_diff(cases[i].fn, c, cases[i].x);   /* also the first (compiling) call */
        double e = median_ms(cases[i].fn, NULL, cases[i].x), k = median_ms(NULL, c, cases[i].x);
        char *ex = tj_explain(c), *p = ex ? strstr(ex, "compiled: ") : NULL;
        int nk = -1, ne = -1;
        if (p && sscanf(p, "compiled: %d", &nk) == 1 && (p = strchr(p, ',')))
            sscanf(p, ", %d", &ne);
        printf("%-40s %9.3f %9.3f %7.2fx %d+%d%s\n", cases[i].what, e, k, e / k, nk, ne,
               rd > 1e-4 ? "  MISMATCH" : "");
        bad |= rd > 1e-4;
        free(ex);
        tj_compiled_free(c);
    }
    tj_release(x1);
    tj_release(x2);
    return bad;
}
