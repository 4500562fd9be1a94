/* comm.c - libtjit_dist's communication layer over MPI: init, rank, world,
 * allreduce, broadcast, barrier, abort, and the one wait that every
 * operation ends in (polls its request, fails after the timeout, so a rank
 * that died or stopped makes the others fail instead of hanging). */
#include <math.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "dist.h"

static atomic_int we_initialised;   /* tj_dist_init called MPI_Init_thread */
static _Atomic double timeout_s = 0;   /* 0: not set yet (env or default) */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double dist_now(void) { return now_s(); }

void tj_dist_set_timeout(double seconds) { timeout_s = seconds > 0 ? seconds : 300; }

static double timeout(void)
{
    double t = timeout_s;
    if (t <= 0) {
        const char *e = getenv("TJIT_DIST_TIMEOUT");
        t = e && atof(e) > 0 ? atof(e) : 300;
        timeout_s = t;
    }
    return t;
}

int dist_check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    tj_set_error("dist: %s failed on rank %d: %.*s", what, tj_dist_rank(), len, msg);
    return -1;
}

int dist_ready(void)
{
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down)
        return 0;
    tj_set_error("dist: MPI is not running (call tj_dist_init first%s)", down ? "; it was finalized" : "");
    return -1;
}

int dist_wait(MPI_Request *req, const char *what)
{
    double t0 = now_s(), limit = timeout();
    for (long spins = 0;; spins++) {
        int done = 0;
        if (dist_check(MPI_Test(req, &done, MPI_STATUS_IGNORE), what) != 0)
            return -1;
        if (done)
            return 0;
        if (spins > 2000) {
            /* more ranks than cores: give the others the CPU */
            struct timespec nap = {0, 50000};
            nanosleep(&nap, NULL);
            if (now_s() - t0 > limit) {
                tj_set_error("dist: %s on rank %d did not complete within %.0f s: another rank "
                             "died, stopped or is not making the same calls "
                             "(TJIT_DIST_TIMEOUT sets the limit)", what, tj_dist_rank(), limit);
                return -1;
            }
        }
    }
}

int tj_dist_init(int *argc, char ***argv)
{
    int up = 0, provided = 0;
    MPI_Initialized(&up);
    if (!up) {
        if (dist_check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread") != 0)
            return -1;
        atomic_store(&we_initialised, 1);
    }
    /* errors come back as codes (and then messages), not as aborts */
    return dist_check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

int tj_dist_finalize(void)
{
    if (!atomic_exchange(&we_initialised, 0))
        return 0;
    int down = 0;
    MPI_Finalized(&down);
    return down ? 0 : dist_check(MPI_Finalize(), "MPI_Finalize");
}

static int comm_query(int (*q)(MPI_Comm, int *))
{
    int up = 0, down = 0, v = -1;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down)
        q(MPI_COMM_WORLD, &v);
    return v;
}

int tj_dist_rank(void) { return comm_query(MPI_Comm_rank); }
int tj_dist_world_size(void) { return comm_query(MPI_Comm_size); }

void tj_dist_abort(int code)
{
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down)
        MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

int dist_mpi_type(tj_dtype dt, MPI_Datatype *out)
{
    switch (dt) {
    case TJ_F32: *out = MPI_FLOAT; return 0;
    case TJ_F64: *out = MPI_DOUBLE; return 0;
    case TJ_I32: *out = MPI_INT32_T; return 0;
    case TJ_I64: *out = MPI_INT64_T; return 0;
    default: return -1;
    }
}

/* t's contiguous data and MPI type, or -1 with an error naming op. */
static void *buffer(tj_tensor *t, const char *op, MPI_Datatype *type)
{
    char d[64];
    if (!t) {
        if (!tj_last_error()[0])
            tj_set_error("dist: %s: tensor is NULL", op);
        return NULL;
    }
    if (dist_ready() != 0)
        return NULL;
    if (dist_mpi_type(tj_dtype_of(t), type) != 0 || !tj_is_contiguous(t)) {
        tj_set_error("dist: %s(%s): needs a contiguous f32, f64, i32 or i64 tensor", op,
                     tj_describe(t, d, sizeof d));
        return NULL;
    }
    return tj_data(t);
}

int tj_dist_allreduce(tj_tensor *t, tj_dist_op op)
{
    MPI_Datatype type;
    void *p = buffer(t, "allreduce", &type);
    if (!p)
        return -1;
    char d[64];
    bool fl = type == MPI_FLOAT || type == MPI_DOUBLE;
    if ((unsigned)op > TJ_DIST_MIN || (op == TJ_DIST_AVG && !fl)) {
        tj_set_error("dist: allreduce(%s): op %d is not SUM, AVG (float), MAX or MIN", tj_describe(t, d, sizeof d), (int)op);
        return -1;
    }
    MPI_Op mop = op == TJ_DIST_MAX ? MPI_MAX : op == TJ_DIST_MIN ? MPI_MIN : MPI_SUM;
    MPI_Request req;
    int64_t n = tj_numel(t);
    if (n > INT32_MAX) {
        tj_set_error("dist: allreduce(%s): more than 2^31 elements", tj_describe(t, d, sizeof d));
        return -1;
    }
    if (dist_check(MPI_Iallreduce(MPI_IN_PLACE, p, (int)n, type, mop, MPI_COMM_WORLD, &req), "allreduce") != 0 ||
        dist_wait(&req, "allreduce") != 0)
        return -1;
    if (op == TJ_DIST_AVG)
        dist_scale(p, type, n, 1.0 / tj_dist_world_size());
    return 0;
}

void dist_scale(void *p, MPI_Datatype type, int64_t n, double s)
{
    if (type == MPI_FLOAT) {
        float *f = p, fs = (float)s;
        for (int64_t i = 0; i < n; i++)
            f[i] *= fs;
    } else {
        double *f = p;
        for (int64_t i = 0; i < n; i++)
            f[i] *= s;
    }
}

int tj_dist_broadcast(tj_tensor *t, int root)
{
    MPI_Datatype type;
    void *p = buffer(t, "broadcast", &type);
    if (!p)
        return -1;
    int world = tj_dist_world_size();
    if (root < 0 || root >= world) {
        tj_set_error("dist: broadcast: root %d is not a rank (world size %d)", root, world);
        return -1;
    }
    MPI_Request req;
    return dist_check(MPI_Ibcast(p, (int)tj_numel(t), type, root, MPI_COMM_WORLD, &req), "broadcast") != 0
               ? -1 : dist_wait(&req, "broadcast");
}

int tj_dist_barrier(void)
{
    MPI_Request req;
    if (dist_ready() != 0 || dist_check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "barrier") != 0)
        return -1;
    return dist_wait(&req, "barrier");
}
