/* partition.h - the joint forward/backward graph split in two (partition.c):
 * the AOTAutograd partitioner's counterpart.
 *
 * A joint graph computes a function's results and, from tangent inputs (the
 * incoming gradients: inputs whose name starts with "tangent"), their
 * backward. Its first nfwd outputs are the forward's (they must not read a
 * tangent), the rest the backward's. The partition makes two graphs:
 *
 *   forward   inputs: the joint's inputs without the tangents, in order;
 *             outputs: the nfwd forward outputs, then the saved values
 *   backward  inputs: every joint input, in order (tangents included), then
 *             saved0 .. saved<n-1>; outputs: the backward outputs
 *
 * and decides which forward values to save: a minimum cut (mincut.h) of a
 * network in which each forward op node is an edge weighted by the bytes
 * saving it moves, the values the backward reads hang from the sink and the
 * values that must be computed in the forward from the source (documented in
 * docs/training.md):
 *
 *   - inputs of the joint graph are there for both: never saved, free;
 *   - a view is viewed again in the backward: what it views is saved;
 *   - the results of matmul, conv2d, reductions, gather, index_select,
 *     the nn composites (softmax, layer_norm, ...), eq/ne (a mask of
 *     x == max(x) must see the x the max came from) and pointwise values more
 *     than PS_PARTITION_MAX_CHAIN pointwise producers deep are never computed
 *     again;
 *   - a pointwise value, a layout move (copy, pad, flip, cat), a constant or a
 *     full_like may be: saving it costs its bytes once when the forward stores
 *     it anyway (a forward output, or read by a matmul, reduction, ...: the
 *     backward's read) and twice when it is stored only for the backward (the
 *     write and the read); computing it again costs nothing where pointwise
 *     readers fuse it and twice its bytes where a backward matmul or conv2d
 *     reads it.
 *
 * Of the cuts that move the fewest bytes, one that computes the fewest
 * arithmetic values again; of those, the one nearest the source.
 *
 * region (NULL: none) gives each op node its activation checkpoint
 * (tj_checkpoint, traced: 1, 2, ...; 0 outside any; -1 for the nodes the
 * backward made, which read the forward's values without making them escape
 * a checkpoint): a node inside one is
 * computed again in the backward whatever its op (a matmul too; not a random
 * draw, rand or dropout, whose numbers the backward's call would not draw
 * again: ir_op_draws), and saved
 * only where a forward value outside that checkpoint reads it (its results,
 * the next block's input) and the cut finds that cheaper; what a checkpoint
 * reads from outside it (its inputs: what the previous one returned) is
 * computed in the forward and saved, so each checkpoint is computed again
 * from its own inputs, as torch.utils.checkpoint does.
 */
#ifndef TJ_PASSES_PARTITION_H
#define TJ_PASSES_PARTITION_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir/graph.h"

#define PS_PARTITION_MAX_CHAIN 64

typedef struct ps_partition {
    ir_graph *fwd;        /* "<joint>_forward" */
    ir_graph *bwd;        /* "<joint>_backward" */
    int nsaved;           /* forward outputs after the first nfwd */
    int nrecomputed;      /* forward op nodes the backward computes again (views and
                             constants, which are free, not counted) */
    int64_t saved_bytes;  /* what the saved values hold (at symval's sizes) */
    char *report;         /* one line per saved or recomputed value, in the joint's
                             numbering ("saved %3 = matmul f32[4,8] (128 bytes)"), then
                             "the cut: N bytes written and read for the backward" */
} ps_partition;

/* Splits joint (which stays the caller's); the bytes of a value with
 * symbolic dims are weighed at the sizes symval[k] of each symbol k (the
 * traced ones; NULL: such a dim counts as 1). 0, or -1 with a message in err
 * (nfwd out of range, a forward output that reads a tangent, out of memory). */
int ps_partition_joint(const ir_graph *joint, int nfwd, const int64_t *symval, const int *region,
                       ps_partition *out, char *err, size_t nerr);
void ps_partition_free(ps_partition *p);

/* Whether input n of a joint graph is a tangent (its name starts with "tangent"). */
bool ps_is_tangent(const ir_node *n);

/* The backward graph bwd (as ps_partition_joint made it) for a backward in
 * which the tangent inputs marked absent[i] got no gradient: what depends on
 * tangents only through those is a structural zero and goes (an add with it
 * is the other operand, another reader takes zeros, such an output is
 * zeros), as eager's walk sums nothing where no gradient arrives; the same
 * inputs in the same order (bwd_prune.c). A new graph, or NULL with err. */
ir_graph *ps_backward_prune(const ir_graph *bwd, const bool *absent, char *err, size_t nerr);

#endif
