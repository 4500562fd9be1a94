/* driver.c - runs an exported model the way a deployment would: built by
 * scripts/test-export.sh against the model's generated header and
 * libtjit_rt alone (no LLVM). Loads DIR/in<k>.npy, runs MODEL_run once, compares each
 * result with DIR/out<k>.npy (the compiled call of the exporting process)
 * and prints the milliseconds from main to the loaded model and to the
 * first result, and the process's CPU time (every thread) until then.
 *
 *   cc -DMODEL=p4 -DMODEL_H='"p4.h"' -DNARGS=1 -DNRES=1 driver.c -ltjit_rt
 *   ./driver model.so DIR [TOL]     exit 0: every result within TOL (default 1e-5)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include MODEL_H

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static double now_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

int main(int argc, char **argv)
{
    double t0 = now_ms();
    if (argc < 3) {
        fprintf(stderr, "usage: driver MODEL.so DIR [TOL]\n");
        return 2;
    }
    double tol = argc > 3 ? atof(argv[3]) : 1e-5;
    CAT(MODEL, _inputs) in;
    CAT(MODEL, _outputs) out;
    _Static_assert(sizeof in == NARGS * sizeof(tj_tensor *), "inputs are NARGS tensors");
    _Static_assert(sizeof out == NRES * sizeof(tj_tensor *), "outputs are NRES tensors");
    tj_tensor **inv = (tj_tensor **)&in, **outv = (tj_tensor **)&out;
    char p[4096];
    for (int k = 0; k < NARGS; k++) {
        snprintf(p, sizeof p, "%s/in%d.npy", argv[2], k);
        if (!(inv[k] = tj_load_npy(p))) {
            fprintf(stderr, "driver: %s\n", tj_last_error());
            return 1;
        }
    }
    double t1 = now_ms();
    tj_aot_model *m = CAT(MODEL, _load)(argv[1]);
    double t2 = now_ms();
    if (!m || CAT(MODEL, _run)(m, &in, &out) != 0) {
        fprintf(stderr, "driver: %s\n", tj_last_error());
        return 1;
    }
    double t3 = now_ms(), cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    int bad = 0;
    for (int k = 0; k < NRES; k++) {
        snprintf(p, sizeof p, "%s/out%d.npy", argv[2], k);
        tj_tensor *want = tj_load_npy(p);
        if (!want || tj_numel(want) != tj_numel(outv[k]) || tj_dtype_of(want) != TJ_F32 ||
            tj_dtype_of(outv[k]) != TJ_F32) {
            fprintf(stderr, "driver: out%d: %s\n", k, want ? "type differs" : tj_last_error());
            return 1;
        }
        const float *a = tj_data(outv[k]), *b = tj_data(want);
        double md = 0, mx = 1;
        for (int64_t i = 0; i < tj_numel(want); i++) {
            md = fmax(md, fabs((double)a[i] - (double)b[i]));
            mx = fmax(mx, fabs((double)b[i]));
        }
        printf("out%d: %lld values, max |diff| %.3g (scaled %.3g)\n", k, (long long)tj_numel(want), md, md / mx);
        bad += !(md / mx <= tol);
        tj_release(want);
    }
    printf("ms: inputs %.2f, load %.2f, first run %.2f, main to first result %.2f; CPU ms of the process "
           "to its first result %.2f\n", t1 - t0, t2 - t1, t3 - t2, t3 - t0, cpu);
    for (int k = 0; k < NRES; k++)
        tj_release(outv[k]);
    for (int k = 0; k < NARGS; k++)
        tj_release(inv[k]);
    CAT(MODEL, _free)(m);
    return bad ? 1 : 0;
}
