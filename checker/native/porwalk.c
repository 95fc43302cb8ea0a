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
    const int64_t *wait_bar;    /* per row: the bar id of an mbarrier wait, else -1 */
} pw_tables;

typedef struct {
    uint8_t *fp;        /* n_pairs: 1 where the pair is in the footprint */
    int64_t *counts;    /* n_bars: arrivals (-1: the barrier is not arrived at) */
    int64_t *ops;       /* 4 ints an operation */
    int64_t ops_cap;    /* room in ops, in operations */
    int64_t n_ops;      /* -1: unbounded */
    int32_t looped;
    int32_t n_visited;
    int64_t *pairs;     /* the pairs set in fp, in the order first set (n_fp of them) */
    int64_t n_fp;
} pw_result;

static int64_t row_end(const int64_t *off, int64_t r) {
    /* the next row's start; rows of -1 (None) are skipped over */
    int64_t k = r + 1;
    while (off[k] < 0) k++;
    return off[k];
}

/* does the blocking instruction at pc stay blocked? (1/0; -1: no answer) */
typedef int (*pw_answer)(void *ctx, int32_t a, int32_t pc);

static int answer_from_array(void *ctx, int32_t a, int32_t pc) {
    (void)a;
    return ((const int8_t *)ctx)[pc];
}

static int walk_core(const pw_tables *t, int32_t a, int32_t start, int32_t frozen_cl,
                     pw_answer answer, void *ctx, pw_result *r);

/* 0: done; -1: a blocking pc without an answer was reached; -2: ops overflow */
int pw_walk(const pw_tables *t, int32_t a, int32_t start, int32_t frozen_cl,
            const int8_t *blocked, pw_result *r) {
    return walk_core(t, a, start, frozen_cl, answer_from_array, (void *)blocked, r);
}

static int walk_core(const pw_tables *t, int32_t a, int32_t start, int32_t frozen_cl,
                     pw_answer answer, void *ctx, pw_result *r) {
    int64_t base = t->pc_base[a], n = t->pc_base[a + 1] - base;
    const int64_t *fo = frozen_cl ? t->seg_fp_nc_off : t->seg_fp_off;
    const int64_t *fd = frozen_cl ? t->seg_fp_nc : t->seg_fp;
    uint8_t *seen = calloc((size_t)n, 1);
    int32_t *stack = malloc(sizeof(int32_t) * (size_t)(n * 4 + 4));
    int32_t *visited = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int64_t sp = 0, cap = n * 4 + 4, nv = 0;
    int rc = 0, looped = 0;
    for (int64_t i = 0; i < r->n_fp; i++) r->fp[r->pairs[i]] = 0;
    r->n_fp = 0;
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
            int b = answer(ctx, a, pc);
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
        for (int64_t k = fo[row]; k < row_end(fo, row); k++) {
            if (!r->fp[fd[k]]) {
                r->fp[fd[k]] = 1;
                r->pairs[r->n_fp++] = fd[k];
            }
        }
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

/* ------------------------------------------------------------------ the settle analysis
 * _Ctx._settle_futures in native code: the futures of the units outside T with the
 * mbarrier waits that stay blocked before T moves, as a greatest fixpoint from every
 * wait of a warp outside T that cannot pass now (the plain fixpoint: every blocked
 * barrier is asked again in every round, as with por.INCREMENTAL_SETTLE off).  The
 * state comes in as a pw_state; what a blocking instruction needs of T to stay blocked
 * (_Ctx._block_requirement) is asked through the ``need`` callback, once per pc and
 * state (pw_reset forgets the answers). */

#define PW_MAX_WORDS 4
#define PW_MAX_SETS 32

typedef struct {
    int32_t n_units, n_words;
    const int32_t *kind;        /* 0: warp, 1: environment unit */
    const int32_t *agent;       /* a warp unit's warp */
    const int32_t *pc;          /* a warp unit's pc */
    const int64_t *env_fp_off, *env_fp;     /* per unit (warps: empty rows) */
    const int64_t *env_arr_off, *env_arr;   /* (bar, count) pairs */
    const int64_t *env_ops_off, *env_ops;   /* 4 ints an operation */
    const int64_t *cw_off, *cw;             /* closed waits (bar ids) per unit */
    const int64_t *pending, *tx;            /* per bar */
    const int64_t *pair_bar;                /* per pair: its bar id if a barrier's, else -1 */
    int32_t frozen_cl;
    const uint64_t *T;                      /* n_words */
    int (*need)(int32_t a, int32_t pc, uint64_t *sets, int32_t max_sets);
    /* per row (pc_base numbering): -3 not asked yet, -1 none, -2 cluster, k >= 0 sets */
    int32_t *need_kind;
    uint64_t *need_sets;                    /* per row: PW_MAX_SETS * n_words words */
} pw_state;

typedef struct {
    uint8_t *blocked;        /* n_bars: the barriers kept blocked at the fixpoint */
    uint8_t *unbounded;      /* n_bars */
    /* per unit (others only): footprint pairs, arrivals, operations */
    int64_t *fp_off, *fp;    /* n_units + 1 offsets */
    int64_t *arr_off, *arr;  /* (bar, count) pairs, bars ascending */
    int64_t *ops_off, *ops;  /* ops_off[u] = -1: unbounded */
    int64_t fp_cap, arr_cap, ops_cap;
    int32_t rounds;
} pw_settled;

void pw_reset(int64_t rows, int32_t *need_kind) {
    for (int64_t i = 0; i < rows; i++) need_kind[i] = -3;
}

/* _can_complete(pending, tx, ops, None): could some non-empty subset of ops complete
 * the phase or over-arrive?  The same search over (arrived, tx, count) triples, with
 * the same give-up bound (more than 4096 triples: yes). */
#define CC_SLOTS 16384
typedef struct { int64_t am, tm, k; } cc_t;
static uint64_t cc_hash(int64_t am, int64_t tm, int64_t k) {
    uint64_t h = (uint64_t)am * 0x9E3779B97F4A7C15ULL;
    h ^= (uint64_t)tm * 0xC2B2AE3D27D4EB4FULL + (h << 6) + (h >> 2);
    h ^= (uint64_t)k * 0x165667B19E3779F9ULL + (h << 6) + (h >> 2);
    return h;
}
static int cc_add(cc_t *slots, uint8_t *used, cc_t *list, int64_t *n, cc_t x) {
    uint64_t h = cc_hash(x.am, x.tm, x.k) & (CC_SLOTS - 1);
    while (used[h]) {
        if (slots[h].am == x.am && slots[h].tm == x.tm && slots[h].k == x.k) return 0;
        h = (h + 1) & (CC_SLOTS - 1);
    }
    used[h] = 1;
    slots[h] = x;
    list[(*n)++] = x;
    return 1;
}
int pw_can_complete(int64_t pending, int64_t tx, const int64_t *ops, int64_t n_ops,
                    int64_t stride, int64_t proper_of) {
    static cc_t slots[CC_SLOTS], list[CC_SLOTS], fresh[CC_SLOTS];
    static uint8_t used[CC_SLOTS];
    memset(used, 0, sizeof used);
    int64_t n = 0;
    cc_add(slots, used, list, &n, (cc_t){0, 0, 0});
    for (int64_t i = 0; i < n_ops; i++) {
        const int64_t *o = ops + stride * i;
        int64_t kind = o[1], count = o[2], dtx = o[3];
        if (kind == 2) return 1;
        int64_t da = kind == 0 ? count : 0, dt = kind == 0 ? dtx : -count;
        int64_t nf = 0;
        for (int64_t j = 0; j < n; j++) {
            int64_t a2 = list[j].am + da;
            if (a2 > pending) return 1;
            fresh[nf++] = (cc_t){a2, list[j].tm + dt, list[j].k + 1};
        }
        for (int64_t j = 0; j < nf; j++) {
            cc_add(slots, used, list, &n, fresh[j]);
            if (n > 4096) return 1;
        }
        if (n > 4096) return 1;
    }
    for (int64_t j = 0; j < n; j++) {
        if (list[j].k == 0) continue;
        if (proper_of >= 0 && list[j].k == proper_of) continue;
        if (list[j].am == pending && tx + list[j].tm == 0) return 1;
    }
    return 0;
}

typedef struct {
    const pw_tables *t;
    pw_state *s;
    const uint8_t *blocked;
} settle_ctx;

static int subset_of(const uint64_t *x, const uint64_t *T, int32_t w) {
    for (int32_t i = 0; i < w; i++)
        if (x[i] & ~T[i]) return 0;
    return 1;
}

/* _Ctx._blocked_frozen in a settle round whose blocked barriers are ctx->blocked */
static int answer_settle(void *vctx, int32_t a, int32_t pc) {
    settle_ctx *c = vctx;
    const pw_tables *t = c->t;
    pw_state *s = c->s;
    int64_t row = t->pc_base[a] + pc;
    uint64_t *sets = s->need_sets + row * PW_MAX_SETS * s->n_words;
    int32_t k = s->need_kind[row];
    if (k == -3) {
        k = s->need(a, pc, sets, PW_MAX_SETS);
        if (k < -2) return -1;  /* more sets than room: no answer */
        s->need_kind[row] = k;
    }
    if (k == -1) return 0;
    int64_t wb = t->wait_bar[row];
    if (wb >= 0 && c->blocked[wb]) return 1;
    if (k == -2) return s->frozen_cl;
    for (int32_t i = 0; i < k; i++)
        if (subset_of(sets + i * s->n_words, s->T, s->n_words)) return 1;
    return 0;
}

/* the end of future i's operations (the next bounded one's start) */
static int64_t ops_end(const int64_t *off, int32_t i, int32_t n) {
    int32_t k = i + 1;
    while (k < n && off[k] < 0) k++;
    return off[k];
}

/* 0: done; -1: a requirement could not be answered; -2: out of room */
int pw_settle(const pw_tables *t, pw_state *s, const int32_t *others, int32_t n_others,
              pw_result *r, pw_settled *out) {
    int64_t nb = t->n_bars;
    uint8_t *blocked = out->blocked, *unb = out->unbounded;
    uint8_t *keep = calloc((size_t)nb + 1, 1);
    int64_t *per_bar = calloc((size_t)nb + 1, sizeof(int64_t));
    int64_t *bar_at = calloc((size_t)nb + 2, sizeof(int64_t));
    int64_t *gathered = NULL;
    int rc = 0;
    memset(blocked, 0, (size_t)nb);
    for (int32_t i = 0; i < n_others; i++) {
        int32_t v = others[i];
        if (s->kind[v] != 0) continue;
        for (int64_t k = s->cw_off[v]; k < s->cw_off[v + 1]; k++) blocked[s->cw[k]] = 1;
    }
    settle_ctx ctx = {t, s, blocked};
    out->rounds = 0;
    for (;;) {
        out->rounds++;
        int64_t nfp = 0, narr = 0, nops = 0;
        memset(unb, 0, (size_t)nb);
        for (int32_t i = 0; i < n_others; i++) {
            int32_t v = others[i];
            out->fp_off[i] = nfp;
            out->arr_off[i] = narr;
            if (s->kind[v] == 0) {
                int w = walk_core(t, s->agent[v], s->pc[v], s->frozen_cl, answer_settle,
                                  &ctx, r);
                if (w == -1) { rc = -1; goto done; }
                if (w != 0) { rc = -2; goto done; }
                if (nfp + r->n_fp > out->fp_cap) { rc = -2; goto done; }
                memcpy(out->fp + nfp, r->pairs, sizeof(int64_t) * (size_t)r->n_fp);
                nfp += r->n_fp;
                for (int64_t b = 0; b < nb; b++) {
                    if (r->counts[b] < 0) continue;
                    if (narr + 2 > out->arr_cap) { rc = -2; goto done; }
                    out->arr[narr++] = b;
                    out->arr[narr++] = r->counts[b];
                }
                if (r->n_ops < 0) {
                    out->ops_off[i] = -1;
                } else {
                    if (nops + r->n_ops > out->ops_cap) { rc = -2; goto done; }
                    out->ops_off[i] = nops;
                    memcpy(out->ops + 4 * nops, r->ops, sizeof(int64_t) * 4 * (size_t)r->n_ops);
                    nops += r->n_ops;
                }
            } else {
                int64_t n = s->env_fp_off[v + 1] - s->env_fp_off[v];
                if (nfp + n > out->fp_cap) { rc = -2; goto done; }
                memcpy(out->fp + nfp, s->env_fp + s->env_fp_off[v], sizeof(int64_t) * (size_t)n);
                nfp += n;
                n = s->env_arr_off[v + 1] - s->env_arr_off[v];
                if (narr + n > out->arr_cap) { rc = -2; goto done; }
                memcpy(out->arr + narr, s->env_arr + s->env_arr_off[v], sizeof(int64_t) * (size_t)n);
                narr += n;
                n = (s->env_ops_off[v + 1] - s->env_ops_off[v]) / 4;
                if (nops + n > out->ops_cap) { rc = -2; goto done; }
                out->ops_off[i] = nops;
                memcpy(out->ops + 4 * nops, s->env_ops + s->env_ops_off[v],
                       sizeof(int64_t) * 4 * (size_t)n);
                nops += n;
            }
            /* an unbounded future: every barrier its footprint touches is unbounded */
            if (out->ops_off[i] < 0)
                for (int64_t k = out->fp_off[i]; k < nfp; k++)
                    if (s->pair_bar[out->fp[k]] >= 0) unb[s->pair_bar[out->fp[k]]] = 1;
        }
        out->fp_off[n_others] = nfp;
        out->arr_off[n_others] = narr;
        out->ops_off[n_others] = nops;
        /* the operations per barrier, futures in the order of others (_OpsByBar) */
        memset(per_bar, 0, sizeof(int64_t) * (size_t)(nb + 1));
        for (int32_t i = 0; i < n_others; i++) {
            if (out->ops_off[i] < 0) continue;
            int64_t end = ops_end(out->ops_off, i, n_others);
            for (int64_t k = out->ops_off[i]; k < end; k++) per_bar[out->ops[4 * k]]++;
        }
        bar_at[0] = 0;
        for (int64_t b = 0; b < nb; b++) bar_at[b + 1] = bar_at[b] + per_bar[b];
        free(gathered);
        gathered = malloc(sizeof(int64_t) * 4 * (size_t)(bar_at[nb] + 1));
        memset(per_bar, 0, sizeof(int64_t) * (size_t)(nb + 1));
        for (int32_t i = 0; i < n_others; i++) {
            if (out->ops_off[i] < 0) continue;
            int64_t end = ops_end(out->ops_off, i, n_others);
            for (int64_t k = out->ops_off[i]; k < end; k++) {
                int64_t b = out->ops[4 * k];
                memcpy(gathered + 4 * (bar_at[b] + per_bar[b]), out->ops + 4 * k,
                       4 * sizeof(int64_t));
                per_bar[b]++;
            }
        }
        int same = 1;
        for (int64_t b = 0; b < nb; b++) {
            keep[b] = blocked[b] && !unb[b] &&
                !pw_can_complete(s->pending[b], s->tx[b], gathered + 4 * bar_at[b],
                                 bar_at[b + 1] - bar_at[b], 4, -1);
            if (keep[b] != blocked[b]) same = 0;
        }
        if (same) break;
        memcpy(blocked, keep, (size_t)nb);
    }
done:
    free(keep);
    free(per_bar);
    free(bar_at);
    free(gathered);
    return rc;
}
