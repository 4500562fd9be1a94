/* dist.h - internal to libtjit_dist: what comm.c shares with ddp.c. */
#ifndef TJ_DIST_H
#define TJ_DIST_H

#include <mpi.h>

#include "../include/tjit_dist.h"

/* 0 when rc is MPI_SUCCESS, else -1 with "dist: <what> failed on rank r: ...". */
int dist_check(int rc, const char *what);
/* 0 when MPI is initialised and not finalised, else -1 with an error. */
int dist_ready(void);
/* Waits for req, polling, up to the timeout; -1 with an error naming what. */
int dist_wait(MPI_Request *req, const char *what);
/* The MPI type of a tjit dtype (f32, f64, i32, i64); -1 for others. */
int dist_mpi_type(tj_dtype dt, MPI_Datatype *out);
/* p[0..n) *= s, for MPI_FLOAT or MPI_DOUBLE. */
void dist_scale(void *p, MPI_Datatype type, int64_t n, double s);
double dist_now(void);   /* monotonic seconds */

#endif
