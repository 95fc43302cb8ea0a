/* The future of a warp while a stubborn set T is frozen, in native code: the walk of
 * checker/por.py's _Ctx._future and its result (_Ctx._walk_result), over the integer
 * tables of checker/por_tables.py (PorTables.flat).  Which blocking instructions stay
 * blocked is the state-dependent part; it comes in as one answer per pc.
 *
 * The walk: depth-first from the warp's pc over segment successors (a stack, popped
 * from its end, successors pushed in table order -- the order of _Ctx._future); a
 * blocking pc answered "blocked" is not entered; a pc met twice marks a loop unless the
 * program has no back edge.  The result: the union of the segment footprints of the
 * pcs entered (the non-completing ones where the cluster barrier is frozen), the
 * arrival counts per barrier (summed as in Python; por.INF for each after a loop) and the barrier
 * operations of the segments in the order entered (none, "unbounded", after a loop or
 * where a segment's are). */

#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#define PW_INF ((int64_t)1 << 40)

typedef struct {
    int32_t n_agents;
    int64_t n_pairs, n_bars;
    const int64_t *pc_base;     /* first row of each agent, then the end */
    const int64_t *blocking, *acyclic;
    const int64_t *seg_fp_off, *seg_fp, *seg_fp_nc_off, *seg_fp_nc;
    const int64_t *seg_next_off, *seg_next;
    const int64_t *seg_ops_off, *seg_ops; /* -1 offset: unbounded */
    const int64_t *seg_arr_off, *seg_arr;
} pw_tables;

typedef struct {
    uint8_t *fp;        /* n_pairs: 1 where the pair is in the footprint */
    int64_t *counts;    /* n_bars: arrivals (-1: the barrier is not arrived at) */
    int64_t *ops;       /* 4 ints an operation */
    int64_t ops_cap;    /* room in ops, in operations */
    int64_t n_ops;      /* -1: unbounded */
    int32_t looped;
    int32_t n_visited;
} pw_result;

static int64_t row_end(const int64_t *off, int64_t r) {
    /* the next row's start; rows of -1 (None) are skipped over */
    int64_t k = r + 1;
    while (off[k] < 0) k++;
    return off[k];
}

/* 0: done; -1: a blocking pc without an answer was reached; -2: ops overflow */
int pw_walk(const pw_tables *t, int32_t a, int32_t start, int32_t frozen_cl,
            const int8_t *blocked, pw_result *r) {
    int64_t base = t->pc_base[a], n = t->pc_base[a + 1] - base;
    const int64_t *fo = frozen_cl ? t->seg_fp_nc_off : t->seg_fp_off;
    const int64_t *fd = frozen_cl ? t->seg_fp_nc : t->seg_fp;
    uint8_t *seen = calloc((size_t)n, 1);
    int32_t *stack = malloc(sizeof(int32_t) * (size_t)(n * 4 + 4));
    int32_t *visited = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int64_t sp = 0, cap = n * 4 + 4, nv = 0;
    int rc = 0, looped = 0;
    memset(r->fp, 0, (size_t)t->n_pairs);
    for (int64_t b = 0; b < t->n_bars; b++) r->counts[b] = -1;
    stack[sp++] = start;
    while (sp > 0) {
        int32_t pc = stack[--sp];
        if (seen[pc]) {
            if (!t->acyclic[a]) looped = 1;
            continue;
        }
        seen[pc] = 1;
        if (t->blocking[base + pc]) {
            int8_t b = blocked[pc];
            if (b < 0) { rc = -1; goto out; }
            if (b) continue;
        }
        visited[nv++] = pc;
        int64_t row = base + pc;
        for (int64_t k = t->seg_next_off[row]; k < row_end(t->seg_next_off, row); k++) {
            if (sp == cap) {
                cap *= 2;
                stack = realloc(stack, sizeof(int32_t) * (size_t)cap);
            }
            stack[sp++] = (int32_t)t->seg_next[k];
        }
    }
    /* the result, in the order the pcs were entered */
    int64_t nops = 0;
    int unbounded = looped;
    for (int64_t i = 0; i < nv; i++) {
        int64_t row = base + visited[i];
        for (int64_t k = fo[row]; k < row_end(fo, row); k++) r->fp[fd[k]] = 1;
        for (int64_t k = t->seg_arr_off[row]; k < row_end(t->seg_arr_off, row); k += 2) {
            int64_t b = t->seg_arr[k], c = t->seg_arr[k + 1];
            r->counts[b] = (r->counts[b] < 0 ? 0 : r->counts[b]) + c;
        }
        if (unbounded) continue;
        if (t->seg_ops_off[row] < 0) { unbounded = 1; continue; }
        for (int64_t k = t->seg_ops_off[row]; k < row_end(t->seg_ops_off, row); k += 4) {
            if (nops == r->ops_cap) { rc = -2; goto out; }
            memcpy(r->ops + 4 * nops, t->seg_ops + k, 4 * sizeof(int64_t));
            nops++;
        }
    }
    if (looped) {
        for (int64_t b = 0; b < t->n_bars; b++)
            if (r->counts[b] >= 0) r->counts[b] = PW_INF;
    }
    r->n_ops = unbounded ? -1 : nops;
    r->looped = looped;
    r->n_visited = (int32_t)nv;
out:
    free(seen);
    free(stack);
    free(visited);
    return rc;
}
