/* The future of a warp while a stubborn set T is frozen, in native code: the walk of
 * checker/por/'s Closure._future and its result (Closure._walk_result), over the integer
 * tables of checker/por/tables.py (PorTables.flat).  Which blocking instructions stay
 * blocked is the state-dependent part; it comes in as one answer per pc.
 *
 * The walk: depth-first from the warp's pc over segment successors (a stack, popped
 * from its end, successors pushed in table order -- the order of Closure._future); a
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
    const int64_t *wait_parity, *wait_ghost, *wait_own;
    const int64_t *writers_from_off, *writers_from;   /* object ids */
    const int64_t *arrivers_from_off, *arrivers_from; /* bar ids */
    const int64_t *block_kind;  /* 0 never blocked but now, 1 Wait, 2 ClusterWait, 3 ask */
    const int64_t *succ_off, *succ;                   /* control successors */
    /* try_waits (por_tables: try_bar, try_tok) and the known segments of the warps
     * with tokens: rows known_base[a] + pc * 2**n_tok[a] + mask */
    const int64_t *try_bar, *try_tok, *n_tok, *known_base;
    const int64_t *known_fp_off, *known_fp, *known_fp_nc_off, *known_fp_nc;
    const int64_t *known_arr_off, *known_arr, *known_ops_off, *known_ops;
    const int64_t *known_next_off, *known_next;     /* (pc, mask) pairs */
    int64_t phase_mod, warp_size;  /* the model's PHASE_MOD and WARP_SIZE */
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
                     int32_t zero0, pw_answer answer, void *ctx, pw_result *r);

/* 0: done; -1: a blocking pc without an answer was reached; -2: ops overflow; -3: a
 * try_wait token known to be 0 in a warp without known-segment tables.  ``zero0``: the
 * mask of the warp's try_wait tokens that are 0 now (por_tables ``tokens`` order) */
int pw_walk(const pw_tables *t, int32_t a, int32_t start, int32_t frozen_cl,
            int32_t zero0, const int8_t *blocked, pw_result *r) {
    return walk_core(t, a, start, frozen_cl, zero0, answer_from_array, (void *)blocked, r);
}

/* The walk is over nodes (pc, mask of the try_wait tokens known to be 0), as
 * Closure._future: a try_wait answered "blocked" (its phase cannot complete before T moves)
 * sets its token, else clears it, and is entered either way; from a node with a
 * non-empty mask the walk follows the known segment (por_tables known_*), from one
 * without the plain segment.  A pc met again (with any mask) marks a loop unless the
 * program is acyclic; a node met again is not entered again. */
static int walk_core(const pw_tables *t, int32_t a, int32_t start, int32_t frozen_cl,
                     int32_t zero0, pw_answer answer, void *ctx, pw_result *r) {
    int64_t base = t->pc_base[a], n = t->pc_base[a + 1] - base;
    int64_t ntok = t->n_tok[a];
    int64_t M = ntok > 0 ? (int64_t)1 << ntok : 1;
    int64_t kbase = t->known_base[a];
    const int64_t *fo = frozen_cl ? t->seg_fp_nc_off : t->seg_fp_off;
    const int64_t *fd = frozen_cl ? t->seg_fp_nc : t->seg_fp;
    const int64_t *ko = frozen_cl ? t->known_fp_nc_off : t->known_fp_off;
    const int64_t *kd = frozen_cl ? t->known_fp_nc : t->known_fp;
    if (zero0 != 0 && ntok <= 0) return -3;
    uint8_t *seen = calloc((size_t)(n * M), 1);
    uint8_t *seen_pc = calloc((size_t)n, 1);
    int64_t cap = n * 4 + 4;
    int32_t *stack = malloc(sizeof(int32_t) * 2 * (size_t)cap);
    int32_t *visited = malloc(sizeof(int32_t) * 2 * (size_t)(n * M + 1));
    int64_t sp = 0, nv = 0;
    int rc = 0, looped = 0;
    for (int64_t i = 0; i < r->n_fp; i++) r->fp[r->pairs[i]] = 0;
    r->n_fp = 0;
    for (int64_t b = 0; b < t->n_bars; b++) r->counts[b] = -1;
    stack[0] = start;
    stack[1] = zero0;
    sp = 1;
    while (sp > 0) {
        sp--;
        int32_t pc = stack[2 * sp], z = stack[2 * sp + 1];
        int64_t node = (int64_t)pc * M + z;
        if (seen[node] || seen_pc[pc]) {
            if (!t->acyclic[a]) looped = 1;
            if (seen[node]) continue;
        }
        seen[node] = 1;
        seen_pc[pc] = 1;
        int64_t row = base + pc;
        if (t->blocking[row]) {
            int b = answer(ctx, a, pc);
            if (b < 0) { rc = -1; goto out; }
            if (t->try_bar[row] >= 0) {
                int64_t tt = t->try_tok[row];
                if (tt < 0) {  /* a warp with too many tokens for the tables */
                    if (b) { rc = -3; goto out; }
                } else {
                    z &= ~(int32_t)(1 << tt);
                    if (b) z |= (int32_t)(1 << tt);
                }
            } else if (b) {
                continue;
            }
        }
        visited[2 * nv] = pc;
        visited[2 * nv + 1] = z;
        nv++;
        const int64_t *noff = t->seg_next_off, *ndat = t->seg_next;
        int64_t nrow = row, step = 1;
        if (z) {
            noff = t->known_next_off;
            ndat = t->known_next;
            nrow = kbase + (int64_t)pc * M + z;
            step = 2;
        }
        for (int64_t k = noff[nrow]; k < row_end(noff, nrow); k += step) {
            if (sp == cap) {
                cap *= 2;
                stack = realloc(stack, sizeof(int32_t) * 2 * (size_t)cap);
            }
            stack[2 * sp] = (int32_t)ndat[k];
            stack[2 * sp + 1] = step == 2 ? (int32_t)ndat[k + 1] : 0;
            sp++;
        }
    }
    /* the result, in the order the nodes were entered */
    int64_t nops = 0;
    int unbounded = looped;
    for (int64_t i = 0; i < nv; i++) {
        int32_t pc = visited[2 * i], z = visited[2 * i + 1];
        int64_t row = base + pc;
        const int64_t *f_off = fo, *f_dat = fd, *a_off = t->seg_arr_off, *a_dat = t->seg_arr;
        const int64_t *o_off = t->seg_ops_off, *o_dat = t->seg_ops;
        if (z) {
            row = kbase + (int64_t)pc * M + z;
            f_off = ko;
            f_dat = kd;
            a_off = t->known_arr_off;
            a_dat = t->known_arr;
            o_off = t->known_ops_off;
            o_dat = t->known_ops;
        }
        for (int64_t k = f_off[row]; k < row_end(f_off, row); k++) {
            if (!r->fp[f_dat[k]]) {
                r->fp[f_dat[k]] = 1;
                r->pairs[r->n_fp++] = f_dat[k];
            }
        }
        for (int64_t k = a_off[row]; k < row_end(a_off, row); k += 2) {
            int64_t b = a_dat[k], c = a_dat[k + 1];
            r->counts[b] = (r->counts[b] < 0 ? 0 : r->counts[b]) + c;
        }
        if (unbounded) continue;
        if (o_off[row] < 0) { unbounded = 1; continue; }
        for (int64_t k = o_off[row]; k < row_end(o_off, row); k += 4) {
            if (nops == r->ops_cap) { rc = -2; goto out; }
            memcpy(r->ops + 4 * nops, o_dat + k, 4 * sizeof(int64_t));
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
    free(seen_pc);
    free(stack);
    free(visited);
    return rc;
}

/* ------------------------------------------------------------------ the settle analysis
 * Closure._settle_futures in native code: the futures of the units outside T with the
 * mbarrier waits that stay blocked before T moves, as a greatest fixpoint from every
 * wait of a warp outside T that cannot pass now (the plain fixpoint: every blocked
 * barrier is asked again in every round, as with por.futures.INCREMENTAL_SETTLE off).  The
 * state comes in as a pw_state; what a blocking instruction needs of T to stay blocked
 * (Closure._block_requirement) is asked through the ``need`` callback, once per pc and
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
    int64_t *cw_off, *cw;                   /* closed waits (bar ids) per unit */
    const int64_t *pending, *tx;            /* per bar */
    const int64_t *pair_bar;                /* per pair: its bar id if a barrier's, else -1 */
    int32_t frozen_cl;
    const uint64_t *T;                      /* n_words */
    int (*need)(int32_t a, int32_t pc, uint64_t *sets, int32_t max_sets);
    /* per row (pc_base numbering): -3 not asked yet, -1 none, -2 cluster, k >= 0 sets */
    int32_t *need_kind;
    uint64_t *need_sets;                    /* per row: PW_MAX_SETS * n_words words */
    /* what mbarrier waits need, answered here without the callback (native_waits) */
    int32_t native_waits;
    const int32_t *agent_unit;              /* per warp: its unit, -1 when done */
    const int8_t *u_enabled;                /* per unit */
    const int64_t *phase;                   /* per bar */
    const int64_t *obj_bar;                 /* per object: its bar id, else -1 */
    const int64_t *env_w_off, *env_w;       /* per unit: bars an environment unit writes */
    const int64_t *env_a_off, *env_a;       /* per unit: bars it arrives at */
    uint64_t *writers_bar, *arrivers_bar;   /* per bar: n_words words (pw_prepare) */
    /* named-barrier waits, answered here where nw_key is set (NULL: asked) */
    const int64_t *nw_key;                  /* per row: the key of a NamedWait, else -1 */
    const int8_t *nb_arrived;               /* [key * n_units + unit] */
    const int8_t *key_all_only;             /* per key: bar.sync without a count only */
    const int32_t *key_cta;
    const int64_t *key_users_off, *key_users;   /* per key: agents with a NamedBarrierOp */
    const int64_t *cta_agents_off, *cta_agents; /* per CTA: its agents */
    /* wgmma waits, answered here where wg_n is set (NULL: asked) */
    const int64_t *wg_n;                    /* per row: a WgmmaWait's n, else -1 */
    const int64_t *wg_cm;                   /* per agent: its commit count now, -1: none */
    const int64_t *wg_sib_off, *wg_sib;     /* per agent: its warpgroup's members */
    /* per unit: the mask of a warp's try_wait tokens that are 0 now */
    const int32_t *zero0;
    /* per key: the one thread count every warp uses it with (Footprints.nb_count), -1
     * none; and the threads arrived now */
    const int64_t *key_thr, *key_now;
    /* the waits further down that need two completions (Closure._later_waits): per unit
     * their barriers, per row (pc_base numbering) the barrier, else -1; per bar the
     * expected count */
    const int64_t *lw_off, *lw, *lw_row, *expected;
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
    int64_t *bar_at;         /* n_bars + 1: where each barrier's operations start */
    int64_t *gathered;       /* the operations of the bounded futures, per barrier */
    int64_t gathered_cap;    /* in operations */
    uint8_t *blocked2;       /* n_bars: those that cannot complete twice */
} pw_settled;

void pw_reset(int64_t rows, int32_t *need_kind) {
    for (int64_t i = 0; i < rows; i++) need_kind[i] = -3;
}

static void closed_waits(const pw_tables *t, pw_state *s);

/* Closure._writers(("bar", b)) and Closure._arrivers(b) of this state, for every barrier,
 * and the closed waits of every warp */
void pw_prepare(const pw_tables *t, pw_state *s) {
    int32_t w = s->n_words;
    closed_waits(t, s);
    memset(s->writers_bar, 0, sizeof(uint64_t) * (size_t)(t->n_bars * w));
    memset(s->arrivers_bar, 0, sizeof(uint64_t) * (size_t)(t->n_bars * w));
    for (int32_t u = 0; u < s->n_units; u++) {
        uint64_t bitu = (uint64_t)1 << (u & 63);
        int32_t j = u >> 6;
        if (s->kind[u] == 0) {
            int64_t row = t->pc_base[s->agent[u]] + s->pc[u];
            for (int64_t k = t->writers_from_off[row]; k < t->writers_from_off[row + 1]; k++) {
                int64_t b = s->obj_bar[t->writers_from[k]];
                if (b >= 0) s->writers_bar[b * w + j] |= bitu;
            }
            for (int64_t k = t->arrivers_from_off[row]; k < t->arrivers_from_off[row + 1]; k++)
                s->arrivers_bar[t->arrivers_from[k] * w + j] |= bitu;
        } else {
            for (int64_t k = s->env_w_off[u]; k < s->env_w_off[u + 1]; k++)
                s->writers_bar[s->env_w[k] * w + j] |= bitu;
            for (int64_t k = s->env_a_off[u]; k < s->env_a_off[u + 1]; k++)
                s->arrivers_bar[s->env_a[k] * w + j] |= bitu;
        }
    }
}

/* is the mbarrier wait at row closed now (model.system.System._concrete_enabled for
 * Wait false: a barrier of the warp's CTA, the parity and ghost phase it waits for)? */
static int wait_closed_on(const pw_tables *t, const pw_state *s, int64_t row, int64_t b) {
    if (!t->wait_own[row]) return 0;
    int64_t phase = s->phase[b];
    if ((phase & 1) != t->wait_parity[row]) return 0;
    if (t->wait_ghost[row] >= 0) {
        int64_t d = ((phase - t->wait_ghost[row]) % t->phase_mod + t->phase_mod) % t->phase_mod;
        if (d != 0 && d != 1) return 0;
    }
    return 1;
}

static int wait_closed(const pw_tables *t, const pw_state *s, int64_t row) {
    return wait_closed_on(t, s, row, t->wait_bar[row]);
}

/* Closure._closed_waits of every warp unit: the barriers of the mbarrier waits it may
 * reach (Footprints.waits_from: every pc reachable by control flow) that are closed */
static void closed_waits(const pw_tables *t, pw_state *s) {
    if (!s->native_waits) return;
    int64_t ncw = 0;
    uint8_t *mark = calloc((size_t)t->n_bars + 1, 1);
    s->cw_off[0] = 0;
    for (int32_t u = 0; u < s->n_units; u++) {
        if (s->kind[u] == 0) {
            int32_t a = s->agent[u];
            int64_t base = t->pc_base[a], n = t->pc_base[a + 1] - base;
            uint8_t *seen = calloc((size_t)n + 1, 1);
            int32_t *stack = malloc(sizeof(int32_t) * (size_t)(n * 2 + 2));
            int64_t sp = 0, cap = n * 2 + 2;
            int64_t first = ncw;
            stack[sp++] = s->pc[u];
            while (sp > 0) {
                int32_t p = stack[--sp];
                if (p >= n || seen[p]) continue;
                seen[p] = 1;
                int64_t row = base + p;
                if (t->wait_bar[row] >= 0 && wait_closed(t, s, row) && !mark[t->wait_bar[row]]) {
                    mark[t->wait_bar[row]] = 1;
                    s->cw[ncw++] = t->wait_bar[row];
                }
                for (int64_t k = t->succ_off[row]; k < row_end(t->succ_off, row); k++) {
                    if (sp == cap) {
                        cap *= 2;
                        stack = realloc(stack, sizeof(int32_t) * (size_t)cap);
                    }
                    stack[sp++] = (int32_t)t->succ[k];
                }
            }
            for (int64_t k = first; k < ncw; k++) mark[s->cw[k]] = 0;
            free(seen);
            free(stack);
        }
        s->cw_off[u + 1] = ncw;
    }
    free(mark);
}

/* a requirement of kind "threads" (Closure._block_requirement of a wait on a counted named
 * barrier): blocked while WARP_SIZE * |sets[0..w) - T| < (int64_t)sets[w] (the threads
 * missing) */
#define PW_THREADS (-10)

/* Closure._block_requirement of a named-barrier wait (-5: no room, ask) */
static int32_t named_need(const pw_state *s, int32_t a, int64_t row, uint64_t *sets) {
    int64_t k = s->nw_key[row];
    int32_t n = s->n_units, w = s->n_words, ua = s->agent_unit[a], cnt = 0;
    int32_t cta = s->key_cta[k];
    if (s->key_all_only[k]) {
        for (int64_t i = s->cta_agents_off[cta]; i < s->cta_agents_off[cta + 1]; i++) {
            int32_t b = (int32_t)s->cta_agents[i], ub = s->agent_unit[b];
            if (b == a || ub < 0 || s->nb_arrived[k * n + ub]) continue;
            if (cnt == PW_MAX_SETS) return -5;
            memset(sets + cnt * w, 0, sizeof(uint64_t) * (size_t)w);
            sets[cnt * w + (ub >> 6)] |= (uint64_t)1 << (ub & 63);
            cnt++;
        }
        return cnt ? cnt : -1;
    }
    if (s->key_thr[k] >= 0) {
        /* every warp uses it with this thread count and waits right after arriving:
         * the users not done that have not arrived (warp a among them) may make up the
         * current generation's missing threads */
        memset(sets, 0, sizeof(uint64_t) * 2 * (size_t)w);
        for (int64_t i = s->key_users_off[k]; i < s->key_users_off[k + 1]; i++) {
            int32_t b = (int32_t)s->key_users[i], ub = s->agent_unit[b];
            if (ub < 0 || s->nb_arrived[k * n + ub]) continue;
            sets[ub >> 6] |= (uint64_t)1 << (ub & 63);
        }
        sets[w] = (uint64_t)(s->key_thr[k] - s->key_now[k]);
        return PW_THREADS;
    }
    if (ua < 0 || !s->nb_arrived[k * n + ua]) return -1;  /* its flag is clear: enabled */
    memset(sets, 0, sizeof(uint64_t) * (size_t)w);
    for (int64_t i = s->key_users_off[k]; i < s->key_users_off[k + 1]; i++) {
        int32_t b = (int32_t)s->key_users[i], ub = s->agent_unit[b];
        if (b == a || ub < 0) continue;
        sets[ub >> 6] |= (uint64_t)1 << (ub & 63);
        cnt++;
    }
    return cnt ? 1 : -1;
}

/* Closure._block_requirement of a wgmma wait: blocked while a sibling that has not
 * committed the groups it retires is frozen (-5: no room, ask) */
static int32_t wgmma_need(const pw_state *s, int32_t a, int64_t row, uint64_t *sets) {
    int32_t w = s->n_words, cnt = 0;
    if (s->wg_cm[a] < 0) return -1;  /* not in a warpgroup */
    int64_t k = s->wg_cm[a] - s->wg_n[row];
    for (int64_t i = s->wg_sib_off[a]; i < s->wg_sib_off[a + 1]; i++) {
        int32_t b = (int32_t)s->wg_sib[i], ub = s->agent_unit[b];
        if (b == a || ub < 0 || s->wg_cm[b] >= k) continue;
        if (cnt == PW_MAX_SETS) return -5;
        memset(sets + cnt * w, 0, sizeof(uint64_t) * (size_t)w);
        sets[cnt * w + (ub >> 6)] |= (uint64_t)1 << (ub & 63);
        cnt++;
    }
    return cnt ? cnt : -1;
}

/* Closure._block_requirement of an mbarrier wait on bar b (model.system.System.
 * _concrete_enabled for Wait: the phase parity, and the ghost phase where known); a
 * try_wait (is_try) asks the same of its barrier, also at the warp's own pc.  The warp
 * itself is left out of the writers and arrivers only where it sits at the wait: one
 * further down its program may follow its own arrivals on the barrier */
static int32_t wait_need(const pw_tables *t, const pw_state *s, int32_t a, int32_t pc,
                         int64_t row, int64_t b, int is_try, uint64_t *sets) {
    int32_t u = s->agent_unit[a], w = s->n_words;
    int here = u >= 0 && s->pc[u] == pc;
    if (!is_try && here && s->u_enabled[u]) return -1;
    if (!wait_closed_on(t, s, row, b)) return -1;
    int32_t k = 0;
    memcpy(sets, s->writers_bar + b * w, sizeof(uint64_t) * (size_t)w);
    if (here) sets[u >> 6] &= ~((uint64_t)1 << (u & 63));
    k++;
    if (s->pending[b] > 0) {
        memcpy(sets + w, s->arrivers_bar + b * w, sizeof(uint64_t) * (size_t)w);
        if (here) sets[w + (u >> 6)] &= ~((uint64_t)1 << (u & 63));
        k++;
    }
    return k;
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

/* _may_complete(pending, expected, tx, ops, twice) of checker/por/: may the
 * operations complete the current phase (twice: and the next one)?  Partial sums of
 * the operations given to each of the two phases, an arrival beyond a phase's count
 * not counted (an arrival-overflow ends the run); the same search, in the same order,
 * with the same give-up bound (more than 4096 partial sums: yes). */
#define MC_SLOTS 16384
typedef struct { int64_t a1, t1, a2, t2, k; } mc_t;
static int mc_add(mc_t *slots, uint8_t *used, mc_t *list, int64_t *n, mc_t x) {
    uint64_t h = (uint64_t)x.a1 * 0x9E3779B97F4A7C15ULL;
    h ^= (uint64_t)x.t1 * 0xC2B2AE3D27D4EB4FULL + (h << 6) + (h >> 2);
    h ^= (uint64_t)x.a2 * 0x165667B19E3779F9ULL + (h << 6) + (h >> 2);
    h ^= (uint64_t)x.t2 * 0x27D4EB2F165667C5ULL + (h << 6) + (h >> 2);
    h ^= (uint64_t)x.k * 0x85EBCA77C2B2AE63ULL + (h << 6) + (h >> 2);
    h &= MC_SLOTS - 1;
    while (used[h]) {
        if (slots[h].a1 == x.a1 && slots[h].t1 == x.t1 && slots[h].a2 == x.a2 &&
            slots[h].t2 == x.t2 && slots[h].k == x.k) return 0;
        h = (h + 1) & (MC_SLOTS - 1);
    }
    used[h] = 1;
    slots[h] = x;
    list[(*n)++] = x;
    return 1;
}
int pw_may_complete(int64_t pending, int64_t expected, int64_t tx, const int64_t *ops,
                    int64_t n_ops, int64_t stride, int32_t twice) {
    static mc_t slots[MC_SLOTS], list[MC_SLOTS], fresh[2 * MC_SLOTS];
    static uint8_t used[MC_SLOTS];
    memset(used, 0, sizeof used);
    int64_t n = 0;
    mc_add(slots, used, list, &n, (mc_t){0, 0, 0, 0, 0});
    for (int64_t i = 0; i < n_ops; i++) {
        const int64_t *o = ops + stride * i;
        int64_t kind = o[1], count = o[2], dtx = o[3];
        if (kind == 2) return 1;
        int64_t da = kind == 0 ? count : 0, dt = kind == 0 ? dtx : -count;
        int64_t nf = 0;
        for (int64_t j = 0; j < n; j++) {
            mc_t x = list[j];
            if (x.a1 + da <= pending)
                fresh[nf++] = (mc_t){x.a1 + da, x.t1 + dt, x.a2, x.t2, x.k | 1};
            if (twice && x.a2 + da <= expected)
                fresh[nf++] = (mc_t){x.a1, x.t1, x.a2 + da, x.t2 + dt, x.k | 2};
        }
        for (int64_t j = 0; j < nf; j++) {
            mc_add(slots, used, list, &n, fresh[j]);
            if (n > 4096) return 1;
        }
    }
    for (int64_t j = 0; j < n; j++) {
        mc_t x = list[j];
        if (twice) {
            if (x.k == 3 && x.a1 == pending && tx + x.t1 == 0 && x.a2 == expected && x.t2 == 0)
                return 1;
        } else if (x.k && x.a1 == pending && tx + x.t1 == 0) {
            return 1;
        }
    }
    return 0;
}

/* pw_may_complete memoized by its arguments (the operations' kind, count and tx of each,
 * in order): the settle rounds of every seed of every state ask the same few questions
 * (NVIDIA's lifted 2x2 Hopper GEMM: the search behind them was 12% of the CPU).  Exact
 * keys, so the answers are pw_may_complete's; emptied when full (memory bound). */
#define MCM_SLOTS (1 << 16)
#define MCM_ARENA (1 << 22)
typedef struct {
    uint64_t h;
    int64_t pending, expected, tx, off, n;
    int32_t twice, result;
} mcm_t;
static mcm_t mcm_table[MCM_SLOTS];
static uint8_t mcm_used[MCM_SLOTS];
static int64_t mcm_arena[MCM_ARENA];
static int64_t mcm_top, mcm_count;
int pw_may_complete_memo(int64_t pending, int64_t expected, int64_t tx, const int64_t *ops,
                         int64_t n_ops, int64_t stride, int32_t twice) {
    if (3 * n_ops > MCM_ARENA / 4) return pw_may_complete(pending, expected, tx, ops, n_ops,
                                                          stride, twice);
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)twice;
    int64_t head[4] = {pending, expected, tx, n_ops};
    for (int i = 0; i < 4; i++) { h ^= (uint64_t)head[i]; h *= 0xBF58476D1CE4E5B9ULL; h ^= h >> 29; }
    for (int64_t i = 0; i < n_ops; i++)
        for (int j = 1; j < 4; j++) {
            h ^= (uint64_t)ops[stride * i + j]; h *= 0xBF58476D1CE4E5B9ULL; h ^= h >> 29;
        }
    uint64_t j = h & (MCM_SLOTS - 1);
    while (mcm_used[j]) {
        mcm_t *e = &mcm_table[j];
        if (e->h == h && e->pending == pending && e->expected == expected && e->tx == tx &&
            e->n == n_ops && e->twice == twice) {
            int64_t i = 0;
            for (; i < n_ops; i++)
                if (mcm_arena[e->off + 3 * i] != ops[stride * i + 1] ||
                    mcm_arena[e->off + 3 * i + 1] != ops[stride * i + 2] ||
                    mcm_arena[e->off + 3 * i + 2] != ops[stride * i + 3]) break;
            if (i == n_ops) return e->result;
        }
        j = (j + 1) & (MCM_SLOTS - 1);
    }
    int r = pw_may_complete(pending, expected, tx, ops, n_ops, stride, twice);
    if (4 * (mcm_count + 1) > 3 * MCM_SLOTS || mcm_top + 3 * n_ops > MCM_ARENA) {
        memset(mcm_used, 0, sizeof mcm_used);
        mcm_top = mcm_count = 0;
        j = h & (MCM_SLOTS - 1);
    }
    mcm_t *e = &mcm_table[j];
    e->h = h; e->pending = pending; e->expected = expected; e->tx = tx;
    e->n = n_ops; e->twice = twice; e->result = r; e->off = mcm_top;
    for (int64_t i = 0; i < n_ops; i++)
        for (int k = 1; k < 4; k++) mcm_arena[mcm_top++] = ops[stride * i + k];
    mcm_used[j] = 1;
    mcm_count++;
    return r;
}

typedef struct {
    const pw_tables *t;
    pw_state *s;
    const uint8_t *blocked;
    const uint8_t *blocked2;
} settle_ctx;

static int subset_of(const uint64_t *x, const uint64_t *T, int32_t w) {
    for (int32_t i = 0; i < w; i++)
        if (x[i] & ~T[i]) return 0;
    return 1;
}

/* Closure._blocked_frozen in a settle round whose blocked barriers are ctx->blocked */
static int answer_settle(void *vctx, int32_t a, int32_t pc) {
    settle_ctx *c = vctx;
    const pw_tables *t = c->t;
    pw_state *s = c->s;
    int64_t row = t->pc_base[a] + pc;
    uint64_t *sets = s->need_sets + row * PW_MAX_SETS * s->n_words;
    int32_t k = s->need_kind[row];
    if (k == -3 && s->native_waits) {
        int32_t u = s->agent_unit[a];
        int64_t bk = t->block_kind[row];
        if (t->try_bar[row] >= 0) k = wait_need(t, s, a, pc, row, t->try_bar[row], 1, sets);
        else if (u >= 0 && s->pc[u] == pc && s->u_enabled[u]) k = -1;
        else if (bk == 0) k = -1;
        else if (bk == 1) k = wait_need(t, s, a, pc, row, t->wait_bar[row], 0, sets);
        else if (bk == 2) k = -2;
        else if (bk == 3 && s->nw_key && s->nw_key[row] >= 0) {
            k = named_need(s, a, row, sets);
            if (k == -5) k = -3;
        } else if (bk == 3 && s->wg_n && s->wg_n[row] >= 0) {
            k = wgmma_need(s, a, row, sets);
            if (k == -5) k = -3;
        }
        if (k != -3) s->need_kind[row] = k;
    }
    /* a wait further down that needs a second completion of a barrier that cannot
     * complete twice (before the requirement: such a wait may pass now) */
    if (s->lw_row[row] >= 0 && c->blocked2[s->lw_row[row]]) return 1;
    if (k == -3) {
        k = s->need(a, pc, sets, PW_MAX_SETS);
        if (k < -2 && k != PW_THREADS) return -1;  /* more sets than room: no answer */
        s->need_kind[row] = k;
    }
    if (k == -1) return 0;
    int64_t wb = t->wait_bar[row] >= 0 ? t->wait_bar[row] : t->try_bar[row];
    if (wb >= 0 && c->blocked[wb]) return 1;
    if (k == -2) return s->frozen_cl;
    if (k == PW_THREADS) {
        int64_t outside = 0;
        for (int32_t j = 0; j < s->n_words; j++)
            outside += __builtin_popcountll(sets[j] & ~s->T[j]);
        return t->warp_size * outside < (int64_t)sets[s->n_words];
    }
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
    int64_t *bar_at = out->bar_at;
    int64_t *gathered = out->gathered;
    int rc = 0;
    uint8_t *blocked2 = out->blocked2;
    uint8_t *keep2 = calloc((size_t)nb + 1, 1);
    memset(blocked, 0, (size_t)nb);
    memset(blocked2, 0, (size_t)nb);
    for (int32_t i = 0; i < n_others; i++) {
        int32_t v = others[i];
        if (s->kind[v] != 0) continue;
        for (int64_t k = s->cw_off[v]; k < s->cw_off[v + 1]; k++) blocked[s->cw[k]] = 1;
        for (int64_t k = s->lw_off[v]; k < s->lw_off[v + 1]; k++) blocked2[s->lw[k]] = 1;
    }
    settle_ctx ctx = {t, s, blocked, blocked2};
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
                int w = walk_core(t, s->agent[v], s->pc[v], s->frozen_cl, s->zero0[v],
                                  answer_settle, &ctx, r);
                if (w == -1 || w == -3) { rc = -1; goto done; }
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
        if (bar_at[nb] > out->gathered_cap) { rc = -2; goto done; }
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
                !pw_may_complete_memo(s->pending[b], s->expected[b], s->tx[b],
                                   gathered + 4 * bar_at[b], bar_at[b + 1] - bar_at[b], 4, 0);
            if (keep[b] != blocked[b]) same = 0;
            keep2[b] = blocked2[b] && !unb[b] &&
                !pw_may_complete_memo(s->pending[b], s->expected[b], s->tx[b],
                                   gathered + 4 * bar_at[b], bar_at[b + 1] - bar_at[b], 4, 1);
            if (keep2[b] != blocked2[b]) same = 0;
        }
        if (same) break;
        memcpy(blocked, keep, (size_t)nb);
        memcpy(blocked2, keep2, (size_t)nb);
    }
done:
    free(keep);
    free(keep2);
    free(per_bar);
    return rc;
}

/* ------------------------------------------------------------------ the closure
 * Closure.stubborn and Closure._grow in native code.  What a round reads of the state beyond
 * pw_state comes in as a pw_closure (made by checker/native/porwalk.py NativeClosure
 * from the same Closure helpers, once per state); the enablers of a disabled warp
 * (Closure._enablers) are the writers of its barrier for an mbarrier wait, else asked
 * through a callback, once per unit and state. */

#define PW_MAX_UNITS (64 * PW_MAX_WORDS)

typedef struct {
    int32_t n_modes;
    int32_t m_M, m_MR, m_W, m_R, m_O;
    const uint8_t *free_mode;     /* per mode: A, X, O, NA (por.modes.FREE_MODES) */
    const uint8_t *barop_mode;    /* per mode: A, X, O (por.BAR_OPS | {"O"}) */
    const uint8_t *conflict;      /* n_modes x n_modes: por.conflicts */
    const int32_t *obj_kind;      /* per object: 0 bar, 1 arr, 2 exit, 3 nb, 4 other */
    const int32_t *obj_arg;       /* bar id, array index, cta, named-barrier key index */
    int32_t n_objects;
    /* per unit */
    const int8_t *enabled;
    const int64_t *cur_fp_off, *cur_fp;   /* _current_fp before the holders' exception */
    const int64_t *cur_ops_off, *cur_ops; /* _current_ops, 4 ints an operation */
    const int64_t *exit_pair;   /* the unit's (exit, cta) W pair where an exit may drop it */
    const int32_t *ucta;        /* a warp unit's CTA, else -1 */
    const int8_t *cl_cand;      /* a cluster arrive / exit not completing now */
    const int8_t *carr0, *carr_not1;
    const int8_t *exit_sync;    /* 0 no, 1 always, 2 unless the bar.sync 0 cannot complete */
    const int32_t *exit_nbkey, *sync_nbkey;
    /* named barriers (keys) */
    int32_t n_keys;
    const int64_t *nb_need;     /* threads that complete a generation, -1 unknown */
    const int64_t *nb_count;    /* threads arrived now */
    const int64_t *na_pair;     /* the key's NA pair, -1 if none */
    const int8_t *arrived;      /* [key * n_units + unit] */
    /* barrier arrays */
    const int8_t *saturated, *multi_init;
    const int32_t *arr_cta;
    const int8_t *sync0;        /* per CTA: 0 no bar.sync 0, 1 counted, 2 all-thread only */
    const int32_t *sync0_key;   /* per CTA: the key index of (cta, 0) */
    const int64_t *m_pairs_off, *m_pairs; /* per CTA: its arrays' M pairs (n_ctas + 1 offs) */
    int32_t n_ctas;
    /* per pair: the CTA of an (exit, cta) W pair, else -1; the CA pair of ("cl",) */
    const int32_t *pair_exitw_cta;
    int64_t ca_pair;
    const int8_t *observed;     /* per bar: the completed phase is observed */
    const int8_t *in_sys;       /* per bar: a barrier of the system */
    int (*enablers)(int32_t u, uint64_t *out);
    int8_t *en_done;            /* per unit: enablers asked (reset per state) */
    uint64_t *en_sets;          /* per unit: n_words words */
    /* the grow memo of this state: keys and values, n_words words each */
    uint64_t *memo;
    int32_t memo_n, memo_cap;
    /* wgmma waits' owner counts ("HG<warpgroup>" on a buffer): per pair its slot, else
     * -1 (-2: no member ever holds nor reads it); per slot, whether a member of the warpgroup holds the buffer now, and the
     * members that are live and may still read it with their wgmma (Closure._wg_may_hold) */
    const int32_t *hg_slot;
    const int8_t *hg_held;
    const uint64_t *hg_readers;
    /* per slot: the pair of a wgmma read of its buffer (mode "AR"), -1 none: a reader
     * outside T may read before T moves only where its future holds it */
    const int64_t *hg_ar;
    const int8_t *en_kind;      /* per row: how the enablers of a disabled warp
                                 * there are found (EN_*; 0: the callback) */
    const int32_t *env_owner;   /* per unit: 2a for the head of warp a's bulk-store
                                 * queue, 2a + 1 for its cp.async queue, else -1 */
} pw_closure;

static int bit(const uint64_t *T, int32_t u) { return (T[u >> 6] >> (u & 63)) & 1; }
static void setbit(uint64_t *T, int32_t u) { T[u >> 6] |= (uint64_t)1 << (u & 63); }

static int cluster_frozen(const pw_state *s, const pw_closure *c, const uint64_t *T) {
    for (int32_t u = 0; u < s->n_units; u++)
        if (bit(T, u) && s->kind[u] == 0 && c->carr0[u]) return 1;
    return 0;
}

typedef struct {
    /* per other (index into others): flags from its future's footprint */
    int8_t *has_exitw, *has_ca;
    int8_t *has_na;             /* [key * n_others + i] */
} fut_flags;

static int nb_cannot(const pw_closure *c, const pw_state *s, const fut_flags *ff,
                     const int32_t *others, int32_t n_others, int32_t k, int own) {
    if (c->nb_need[k] < 0) return 0;
    int64_t n = 0;
    for (int32_t i = 0; i < n_others; i++)
        if (ff->has_na[(int64_t)k * n_others + i] && !c->arrived[(int64_t)k * s->n_units + others[i]])
            n++;
    return c->nb_count[k] + 32 * (n + own) < c->nb_need[k];
}

enum { EN_ASK = 0, EN_WAIT = 1, EN_CLUSTER = 2, EN_NAMED = 3, EN_WGMMA = 4, EN_BULK = 5,
       EN_CPASYNC = 6, EN_TMEM = 7 };

static void set_agents(const pw_state *s, uint64_t *e, const int64_t *xs, int64_t lo,
                       int64_t hi, int32_t but) {
    for (int64_t k = lo; k < hi; k++) {
        int32_t v = s->agent_unit[xs[k]];  /* -1: exited, not a unit */
        if (v >= 0 && xs[k] != but) setbit(e, v);
    }
}

/* Closure._enablers: the units that may enable the disabled step of warp unit u, into e;
 * 0, or what the callback answers where the kind is not tabled (EN_ASK) */
static int enablers(const pw_tables *t, const pw_state *s, const pw_closure *c, int32_t u,
                    uint64_t *e) {
    int32_t w = s->n_words, a = s->agent[u];
    int64_t row = t->pc_base[a] + s->pc[u];
    int64_t cta = c->ucta[u];
    memset(e, 0, sizeof(uint64_t) * (size_t)w);
    switch (c->en_kind[row]) {
    case EN_WAIT:  /* the writers of its barrier (pw_prepare), less itself */
        memcpy(e, s->writers_bar + t->wait_bar[row] * w, sizeof(uint64_t) * (size_t)w);
        e[u >> 6] &= ~((uint64_t)1 << (u & 63));
        return 0;
    case EN_CLUSTER:  /* every other live warp */
        for (int32_t b = 0; b < t->n_agents; b++)
            if (b != a && s->agent_unit[b] >= 0) setbit(e, s->agent_unit[b]);
        return 0;
    case EN_NAMED:  /* the other live warps of its CTA */
        set_agents(s, e, s->cta_agents, s->cta_agents_off[cta], s->cta_agents_off[cta + 1], a);
        return 0;
    case EN_WGMMA:  /* the other live warps of its warpgroup */
        set_agents(s, e, s->wg_sib, s->wg_sib_off[a], s->wg_sib_off[a + 1], a);
        return 0;
    case EN_BULK: case EN_CPASYNC:  /* the head of its own queue of that kind */
        for (int32_t v = 0; v < s->n_units; v++)
            if (c->env_owner[v] == (c->en_kind[row] == EN_BULK ? 2 * a : 2 * a + 1))
                setbit(e, v);
        return 0;
    case EN_TMEM:  /* the live warps of the peer CTA */
        if ((cta ^ 1) < c->n_ctas)
            set_agents(s, e, s->cta_agents, s->cta_agents_off[cta ^ 1],
                       s->cta_agents_off[(cta ^ 1) + 1], -1);
        return 0;
    default:
        return c->enablers(u, e);
    }
}

/* one round of the closure: 0, or < 0 where it cannot be computed here */
static int grow(const pw_tables *t, pw_state *s, pw_closure *c, uint64_t *T,
                pw_result *r, pw_settled *out) {
    int32_t n = s->n_units, w = s->n_words, nm = c->n_modes;
    /* enablers of the disabled warps of T */
    uint64_t T0[PW_MAX_WORDS];
    memcpy(T0, T, sizeof(uint64_t) * (size_t)w);
    for (int32_t u = 0; u < n; u++) {
        if (!bit(T0, u) || s->kind[u] != 0 || c->enabled[u]) continue;
        uint64_t *e = c->en_sets + (int64_t)u * w;
        if (!c->en_done[u]) {
            if (enablers(t, s, c, u, e) != 0) return -1;
            c->en_done[u] = 1;
        }
        for (int32_t j = 0; j < w; j++) T[j] |= e[j];
    }
    int32_t others[PW_MAX_UNITS], no = 0, oi[PW_MAX_UNITS];
    for (int32_t u = 0; u < n; u++) {
        oi[u] = -1;
        if (!bit(T, u)) { oi[u] = no; others[no++] = u; }
    }
    memcpy((void *)s->T, T, sizeof(uint64_t) * (size_t)w);
    s->frozen_cl = cluster_frozen(s, c, T);
    int rc = pw_settle(t, s, others, no, r, out);
    if (rc != 0) return rc;
    /* flags of the futures */
    int8_t has_exitw[PW_MAX_UNITS], has_ca[PW_MAX_UNITS];
    int8_t *has_na = calloc((size_t)(c->n_keys + 1) * (size_t)(no + 1), 1);
    fut_flags ff = {has_exitw, has_ca, has_na};
    for (int32_t i = 0; i < no; i++) {
        int32_t v = others[i];
        has_exitw[i] = 0;
        has_ca[i] = 0;
        for (int64_t k = out->fp_off[i]; k < out->fp_off[i + 1]; k++) {
            int64_t p = out->fp[k];
            if (p == c->ca_pair) has_ca[i] = 1;
            if (s->kind[v] == 0 && c->pair_exitw_cta[p] >= 0 && c->pair_exitw_cta[p] == c->ucta[v])
                has_exitw[i] = 1;
            int64_t o = p / nm;
            if (c->obj_kind[o] == 3 && p == c->na_pair[c->obj_arg[o]])
                has_na[(int64_t)c->obj_arg[o] * no + i] = 1;
        }
    }
    /* holders: per CTA, the live warps that stay live until T moves */
    uint64_t holders[64][PW_MAX_WORDS];
    if (c->n_ctas > 64) { free(has_na); return -2; }
    memset(holders, 0, sizeof holders);
    for (int32_t u = 0; u < n; u++) {
        if (s->kind[u] != 0) continue;
        if (bit(T, u) || !has_exitw[oi[u]]) setbit(holders[c->ucta[u]], u);
    }
    /* T's footprint (index), its operations per barrier, the barriers it waits on */
    int64_t n_pairs = (int64_t)c->n_objects * nm;
    uint8_t *tidx = calloc((size_t)n_pairs, 1);
    uint8_t *tobj = calloc((size_t)c->n_objects, 1);
    int64_t *tlist = malloc(sizeof(int64_t) * (size_t)(n_pairs + 1));
    int64_t nt = 0;
    uint8_t *t_waits = calloc((size_t)t->n_bars + 1, 1);
    int64_t *t_cnt = calloc((size_t)t->n_bars + 1, sizeof(int64_t));
    for (int32_t u = 0; u < n; u++) {
        if (!bit(T, u) || !c->enabled[u]) continue;
        int release_only = c->sync_nbkey[u] >= 0 &&
            nb_cannot(c, s, &ff, others, no, c->sync_nbkey[u], 1);
        int drop_exit = 0;
        if (c->exit_pair[u] >= 0) {
            uint64_t *h = holders[c->ucta[u]];
            for (int32_t j = 0; j < w; j++) {
                uint64_t x = h[j];
                if (j == (u >> 6)) x &= ~((uint64_t)1 << (u & 63));
                if (x) drop_exit = 1;
            }
        }
        int add_all_m = 0;
        if (c->cl_cand[u]) {
            add_all_m = 1;
            for (int32_t b = 0; b < n && add_all_m; b++) {
                if (b == u || s->kind[b] != 0 || !c->carr_not1[b]) continue;
                if (bit(T, b) || !has_ca[oi[b]]) add_all_m = 0;
            }
        }
        int add_cta_m = 0;
        if (c->exit_sync[u] == 1) add_cta_m = 1;
        if (c->exit_sync[u] == 2)
            add_cta_m = !nb_cannot(c, s, &ff, others, no, c->exit_nbkey[u], 1);
        /* the pairs: current footprint, then the promotions */
        for (int pass = 0; pass < 3; pass++) {
            const int64_t *lo, *hi;
            if (pass == 0) {
                lo = c->cur_fp + c->cur_fp_off[u];
                hi = c->cur_fp + c->cur_fp_off[u + 1];
            } else if (pass == 1) {
                if (!add_all_m) continue;
                lo = c->m_pairs;
                hi = c->m_pairs + c->m_pairs_off[c->n_ctas];
            } else {
                if (!add_cta_m) continue;
                lo = c->m_pairs + c->m_pairs_off[c->ucta[u]];
                hi = c->m_pairs + c->m_pairs_off[c->ucta[u] + 1];
            }
            for (const int64_t *q = lo; q < hi; q++) {
                int64_t p = *q;
                if (pass == 0 && drop_exit && p == c->exit_pair[u]) continue;
                int64_t o = p / nm, m = p % nm;
                if (release_only && m == c->m_M) p = o * nm + c->m_MR, m = c->m_MR;
                if (!tidx[p]) { tidx[p] = 1; tlist[nt++] = p; }
                tobj[o] = 1;
                if (c->obj_kind[o] == 0 && m == c->m_O) t_waits[c->obj_arg[o]] = 1;
            }
        }
        for (int64_t k = c->cur_ops_off[u]; k < c->cur_ops_off[u + 1]; k += 4) t_cnt[c->cur_ops[k]]++;
    }
    /* T's operations per barrier, in unit order */
    int64_t *t_at = calloc((size_t)t->n_bars + 2, sizeof(int64_t));
    for (int64_t b = 0; b < t->n_bars; b++) t_at[b + 1] = t_at[b] + t_cnt[b];
    int64_t *t_ops = malloc(sizeof(int64_t) * 4 * (size_t)(t_at[t->n_bars] + 1));
    memset(t_cnt, 0, sizeof(int64_t) * (size_t)(t->n_bars + 1));
    for (int32_t u = 0; u < n; u++) {
        if (!bit(T, u) || !c->enabled[u]) continue;
        for (int64_t k = c->cur_ops_off[u]; k < c->cur_ops_off[u + 1]; k += 4) {
            int64_t b = c->cur_ops[k];
            memcpy(t_ops + 4 * (t_at[b] + t_cnt[b]), c->cur_ops + k, 4 * sizeof(int64_t));
            t_cnt[b]++;
        }
    }
    /* settle-free barriers and named barriers */
    uint8_t *freeo = calloc((size_t)c->n_objects, 1);
    for (int64_t o = 0; o < c->n_objects; o++) {
        if (!tobj[o]) continue;
        int kind = c->obj_kind[o];
        if (kind == 0) {
            int64_t b = c->obj_arg[o];
            if (out->unbounded[b]) continue;
            int sub = 1;
            for (int32_t m = 0; m < nm; m++)
                if (tidx[o * nm + m] && !c->barop_mode[m]) sub = 0;
            if (!sub) continue;
            if (!c->in_sys[b] || !c->observed[b]) continue;
            const int64_t *non_t = out->gathered + 4 * out->bar_at[b];
            int64_t n_non = out->bar_at[b + 1] - out->bar_at[b];
            if (t_waits[b] && pw_can_complete(s->pending[b], s->tx[b], non_t, n_non, 4, -1))
                continue;
            int64_t n_t = t_at[b + 1] - t_at[b];
            if (n_t > 0) {
                int64_t *all = malloc(sizeof(int64_t) * 4 * (size_t)(n_t + n_non));
                memcpy(all, t_ops + 4 * t_at[b], sizeof(int64_t) * 4 * (size_t)n_t);
                memcpy(all + 4 * n_t, non_t, sizeof(int64_t) * 4 * (size_t)n_non);
                int cc = pw_can_complete(s->pending[b], s->tx[b], all, n_t + n_non, 4, n_t + n_non);
                free(all);
                if (cc) continue;
            }
            freeo[o] = 1;
        } else if (kind == 3) {
            int32_t k = c->obj_arg[o];
            int only_na = c->na_pair[k] >= 0;
            for (int32_t m = 0; m < nm && only_na; m++)
                if (tidx[o * nm + m] && o * nm + m != c->na_pair[k]) only_na = 0;
            if (only_na && tidx[c->na_pair[k]] && nb_cannot(c, s, &ff, others, no, k, 0))
                freeo[o] = 1;
        }
    }
    /* the units outside T whose future conflicts with T's steps (T grows meanwhile:
     * _init_settles reads it) */
    for (int32_t i = 0; i < no; i++) {
        int32_t v = others[i];
        int hit = 0;
        for (int64_t k = out->fp_off[i]; k < out->fp_off[i + 1] && !hit; k++) {
            int64_t p = out->fp[k], o = p / nm, mode = p % nm;
            if (!tobj[o]) continue;
            int kind = c->obj_kind[o];
            /* whether a CTA has exited is read only by violation checks, and only grows:
             * an exit of T taken first can only make such a read fail (EXIT_READS_COMMUTE
             * in checker/por/) */
            if (kind == 2 && mode == c->m_R) continue;
            if (kind == 2 && mode == c->m_W) {
                uint64_t *h = holders[c->obj_arg[o]];
                int other_holder = 0;
                for (int32_t j = 0; j < w; j++) {
                    uint64_t x = h[j];
                    if (s->kind[v] == 0 && j == (v >> 6)) x &= ~((uint64_t)1 << (v & 63));
                    if (x) other_holder = 1;
                }
                if (other_holder) continue;
            }
            if (kind == 1) {
                int32_t ai = c->obj_arg[o];
                if (mode != c->m_W && !tidx[o * nm + c->m_W] && c->saturated[ai]) continue;
                if (mode == c->m_M || mode == c->m_MR) {
                    int sub = 1;
                    for (int32_t m = 0; m < nm; m++)
                        if (tidx[o * nm + m] && m != c->m_W && m != c->m_MR && m != c->m_R) sub = 0;
                    if (sub && !c->multi_init[ai] && cluster_frozen(s, c, T)) {
                        int32_t cta = c->arr_cta[ai];
                        int ok = 1;
                        if (c->sync0[cta] == 1) ok = 0;
                        if (c->sync0[cta] == 2) {
                            int32_t key = c->sync0_key[cta];
                            ok = 0;
                            for (int32_t u = 0; u < n; u++)
                                if (bit(T, u) && s->kind[u] == 0 && c->ucta[u] == cta &&
                                    !c->arrived[(int64_t)key * n + u]) ok = 1;
                        }
                        if (ok) continue;
                    }
                }
            }
            if (freeo[o] && c->free_mode[mode]) continue;
            if (c->hg_slot[p] == -2) continue;  /* never held nor read by its warpgroup */
            if (c->hg_slot[p] >= 0) {
                /* a wgmma wait with no owner count of the buffer to give back before T
                 * moves: none held now, and no member outside T reads it within its
                 * future (a unit outside T now was outside it when the round began) */
                int32_t sl = c->hg_slot[p];
                int may = c->hg_held[sl];
                int64_t ar = c->hg_ar[sl];
                for (int32_t j = 0; j < w && !may && ar >= 0; j++) {
                    uint64_t x = c->hg_readers[(int64_t)sl * w + j] & ~T[j];
                    while (x && !may) {
                        int32_t ri = oi[j * 64 + __builtin_ctzll(x)];
                        x &= x - 1;
                        for (int64_t q = out->fp_off[ri]; q < out->fp_off[ri + 1]; q++)
                            if (out->fp[q] == ar) { may = 1; break; }
                    }
                }
                if (!may) continue;
            }
            for (int32_t m = 0; m < nm; m++)
                if (tidx[o * nm + m] && c->conflict[mode * nm + m]) { hit = 1; break; }
        }
        if (hit) setbit(T, v);
    }
    free(has_na);
    free(tidx);
    free(tobj);
    free(tlist);
    free(t_waits);
    free(t_cnt);
    free(t_at);
    free(t_ops);
    free(freeo);
    return 0;
}

static int32_t count_enabled(const pw_state *s, const pw_closure *c, const uint64_t *T) {
    int32_t k = 0;
    for (int32_t u = 0; u < s->n_units; u++)
        if (bit(T, u) && c->enabled[u]) k++;
    return k;
}

void pw_closure_reset(pw_closure *c, int32_t n_units) {
    memset(c->en_done, 0, (size_t)n_units);
    c->memo_n = 0;
}

/* Closure.stubborn: 1 and T (n_words words) a stubborn set; 0 none (no enabled unit, or
 * at least best_size enabled units, best_size >= 0); < 0 where it cannot be computed */
int pw_stubborn(const pw_tables *t, pw_state *s, pw_closure *c, int32_t seed,
                int32_t best_size, pw_result *r, pw_settled *out, uint64_t *T) {
    int32_t w = s->n_words;
    memset(T, 0, sizeof(uint64_t) * (size_t)w);
    setbit(T, seed);
    for (;;) {
        uint64_t key[PW_MAX_WORDS];
        memcpy(key, T, sizeof(uint64_t) * (size_t)w);
        int found = 0;
        for (int32_t i = 0; i < c->memo_n; i++) {
            if (!memcmp(c->memo + (int64_t)2 * i * w, key, sizeof(uint64_t) * (size_t)w)) {
                memcpy(T, c->memo + (int64_t)(2 * i + 1) * w, sizeof(uint64_t) * (size_t)w);
                found = 1;
                break;
            }
        }
        if (!found) {
            int rc = grow(t, s, c, T, r, out);
            if (rc != 0) return rc;
            if (c->memo_n < c->memo_cap) {
                memcpy(c->memo + (int64_t)2 * c->memo_n * w, key, sizeof(uint64_t) * (size_t)w);
                memcpy(c->memo + (int64_t)(2 * c->memo_n + 1) * w, T, sizeof(uint64_t) * (size_t)w);
                c->memo_n++;
            }
        }
        int changed = memcmp(key, T, sizeof(uint64_t) * (size_t)w) != 0;
        if (best_size >= 0 && count_enabled(s, c, T) >= best_size) return 0;
        if (!changed) break;
    }
    if (count_enabled(s, c, T) == 0) return 0;
    return 1;
}

/* ------------------------------------------------------------------ the state, read
 * NativeClosure._state's reading of one state, from the values of the slots it reads
 * (v: gathered by position, pw_marshal_tables says which position holds what).  It fills
 * the agents' part of pw_state and pw_closure (the units are the live agents, then the
 * environment units: their records are appended by the caller) and the per-barrier,
 * per-key, per-array and per-warpgroup arrays.  The same answers as the Python reading
 * (checker/por/futures.py: Futures._completes, _wg_held, Closure._nb_need, _saturated),
 * which the tests compare it with state by state. */

typedef struct {
    int32_t n_agents, n_bars, n_keys, n_arrays, n_hg, n_pairs_hg;
    const int64_t *pc_base;                  /* first row of each agent, then the end */
    const int64_t *pc_pos, *carr_pos, *wg_cm_pos, *agent_cta;
    const int64_t *tok_off, *tok_pos, *n_tok; /* tokens in PorTables.tokens order */
    /* per row: the static record (NativeClosure._static_record) */
    const int64_t *nc_off, *nc, *step_off, *step;   /* nc_off -1: completes always */
    const int64_t *ep, *cl_static, *es, *ek, *sk, *wg_wait, *completing;
    const int64_t *ops_off, *ops;                   /* 4 ints an operation */
    const int64_t *reads_off, *reads;               /* hg slots the row's wgmma may read */
    const int32_t *hg_slot;                         /* per pair: -1 not an owner count */
    const int64_t *bar_pos;                         /* per table bar: 5 positions or -1 */
    const int64_t *key_static, *key_all_only, *key_cta, *key_count_pos;
    const int64_t *flag_off, *flag_agent, *flag_pos; /* per key: named-barrier flags */
    const int64_t *cta_off, *cta_agent;             /* the agents of each CTA */
    const int64_t *vis_pos;                         /* per table array, -1: not in system */
    int64_t vis_cta, vis_cluster, cluster_one;
    const int64_t *due_off, *due_pos;               /* per hg slot */
    /* the waits a round ahead (Footprints.later_candidates, per row): barrier, position
     * of its phase in v, its array's index among the re-initializable ones or -1;
     * the warps that initialize barriers and, per row, the arrays they may still
     * initialize from there (Footprints.inits_from) */
    const int64_t *lc_off, *lc_bar, *lc_pos, *lc_arr;
    int32_t n_reinit, n_ini;
    const int64_t *ini_agent, *ini_off, *ini_arr;
    int64_t done, warp_size, phase_mod;  /* the model's DONE pc, WARP_SIZE, PHASE_MOD */
} pw_mtables;

typedef struct {
    int32_t *pc, *zero0, *agent_unit;
    int64_t *phase, *pending, *expected, *tx;
    int64_t *cur_fp_off, *cur_fp, *cur_ops_off, *cur_ops, *exit_pair;
    int32_t *ucta, *exit_nbkey, *sync_nbkey;
    int8_t *cl_cand, *carr0, *carr_not1, *exit_sync;
    int64_t *nb_need, *nb_count;
    int8_t *arrived, *saturated, *hg_held, *observed;
    int64_t *wg_cm;
    uint64_t *hg_readers;
    int64_t n_fp, n_ops;                            /* out: the agents' part's lengths */
} pw_mout;


static int64_t at(const int64_t *v, int64_t pos) { return pos < 0 ? 0 : v[pos]; }

void pw_marshal(const pw_mtables *m, const int64_t *v, const int32_t *agents,
                int32_t n_agent_units, int32_t n_units, int32_t words, pw_mout *o) {
    for (int32_t a = 0; a < m->n_agents; a++) o->agent_unit[a] = -1;
    for (int32_t i = 0; i < n_agent_units; i++) o->agent_unit[agents[i]] = i;
    for (int32_t h = 0; h < m->n_hg; h++) {
        int held = 0;
        for (int64_t k = m->due_off[h]; k < m->due_off[h + 1]; k++)
            if (v[m->due_pos[k]] > 0) { held = 1; break; }
        o->hg_held[h] = (int8_t)held;
    }
    memset(o->hg_readers, 0, sizeof(uint64_t) * (size_t)(m->n_hg > 0 ? m->n_hg * words : 1));
    int64_t nf = 0, no = 0;
    o->cur_fp_off[0] = 0;
    o->cur_ops_off[0] = 0;
    for (int32_t i = 0; i < n_agent_units; i++) {
        int32_t a = agents[i];
        int64_t pc = v[m->pc_pos[a]];
        int64_t row = m->pc_base[a] + pc;
        o->pc[i] = (int32_t)pc;
        /* zero_mask: the try_wait tokens that are 0 now */
        int32_t mask = 0, any = 0;
        for (int64_t k = m->tok_off[a]; k < m->tok_off[a + 1]; k++)
            if (v[m->tok_pos[k]] == 0) { mask |= 1 << (k - m->tok_off[a]); any = 1; }
        o->zero0[i] = m->n_tok[a] < 0 ? any : mask;
        /* Futures._completes: a cluster arrive or exit completes where every other warp
         * has exited or arrived */
        int completes = 1;
        if (m->nc_off[row] >= 0 && m->completing[row]) {
            for (int32_t b = 0; b < m->n_agents; b++) {
                if (b == a) continue;
                if (v[m->pc_pos[b]] == m->done) continue;
                if (at(v, m->carr_pos[b]) != 1) { completes = 0; break; }
            }
        }
        const int64_t *src;
        int64_t lo, hi;
        if (m->nc_off[row] >= 0 && !completes) {
            src = m->nc; lo = m->nc_off[row]; hi = row_end(m->nc_off, row);
        } else {
            src = m->step; lo = m->step_off[row]; hi = m->step_off[row + 1];
        }
        for (int64_t k = lo; k < hi; k++) {
            int64_t p = src[k];
            /* Closure._current_fp: a wgmma wait's owner counts only where held now */
            if (m->wg_wait[row] && m->hg_slot[p] != -1 &&
                (m->hg_slot[p] < 0 || !o->hg_held[m->hg_slot[p]]))
                continue;
            o->cur_fp[nf++] = p;
        }
        o->cur_fp_off[i + 1] = nf;
        for (int64_t k = m->ops_off[row]; k < m->ops_off[row + 1]; k++) o->cur_ops[no++] = m->ops[k];
        o->cur_ops_off[i + 1] = no;
        int64_t carr = at(v, m->carr_pos[a]);
        o->exit_pair[i] = m->ep[row];
        o->ucta[i] = (int32_t)m->agent_cta[a];
        o->cl_cand[i] = (int8_t)(m->cl_static[row] && !completes);
        o->carr0[i] = (int8_t)(carr == 0);
        o->carr_not1[i] = (int8_t)(carr != 1);
        o->exit_sync[i] = (int8_t)m->es[row];
        o->exit_nbkey[i] = (int32_t)m->ek[row];
        o->sync_nbkey[i] = (int32_t)m->sk[row];
        for (int64_t k = m->reads_off[row]; k < m->reads_off[row + 1]; k++)
            o->hg_readers[m->reads[k] * words + (i >> 6)] |= (uint64_t)1 << (i & 63);
    }
    o->n_fp = nf;
    o->n_ops = no;
    for (int32_t b = 0; b < m->n_bars; b++) {
        const int64_t *p = m->bar_pos + 5 * b;
        int in = p[0] >= 0;
        o->phase[b] = in ? v[p[0]] : 0;
        o->pending[b] = in ? v[p[1]] : 0;
        o->expected[b] = in ? v[p[2]] : 0;
        o->tx[b] = in ? v[p[3]] : 0;
        o->observed[b] = (int8_t)(in && v[p[4]] == 1);
    }
    memset(o->arrived, 0, (size_t)(m->n_keys * n_units > 0 ? m->n_keys * n_units : 1));
    for (int32_t k = 0; k < m->n_keys; k++) {
        /* Closure._nb_need: the barrier's thread count, else a CTA-wide one's live threads */
        int64_t need = m->key_static[k];
        if (need < 0 && m->key_all_only[k]) {
            need = 0;
            int64_t c = m->key_cta[k];
            for (int64_t j = m->cta_off[c]; j < m->cta_off[c + 1]; j++)
                if (v[m->pc_pos[m->cta_agent[j]]] != m->done) need += m->warp_size;
        }
        o->nb_need[k] = need;
        o->nb_count[k] = at(v, m->key_count_pos[k]);
        for (int64_t j = m->flag_off[k]; j < m->flag_off[k + 1]; j++) {
            int32_t u = o->agent_unit[m->flag_agent[j]];
            if (u >= 0 && v[m->flag_pos[j]] == 1) o->arrived[k * n_units + u] = 1;
        }
    }
    for (int32_t a = 0; a < m->n_agents; a++)
        o->wg_cm[a] = m->wg_cm_pos[a] < 0 ? -1 : v[m->wg_cm_pos[a]];
    for (int32_t x = 0; x < m->n_arrays; x++) {
        int64_t p = m->vis_pos[x];
        int64_t vis = p < 0 ? -1 : v[p];
        o->saturated[x] = (int8_t)(p >= 0 && (vis == m->vis_cluster ||
                                               (vis == m->vis_cta && m->cluster_one)));
    }
}

/* ------------------------------------------------------------------ the waits ahead
 * Futures._later_waits for every live warp, into pw_state's lw_off / lw / lw_row: the
 * waits further down that need two completions of their barrier from its phase now, on
 * barriers no live warp may initialize again.  The answer is a function of the warp's
 * row and its candidates' phases (-1: may be initialized again): memoized here, asked
 * through the callback (Footprints.later_waits) where new. */

#define PW_LATER_MAX 21      /* candidates a key holds: 3 bits each */
#define PW_LATER_PAIRS 4096  /* room for one answer's (pc, barrier) pairs */

typedef struct pw_lmemo pw_lmemo;
struct pw_lmemo {
    int64_t cap, n;                  /* slots (a power of 2), used */
    int64_t *row, *ph, *off, *cnt;   /* per slot: key (row -1: empty), answer in pool */
    int64_t *pool, pool_n, pool_cap; /* (pc, barrier) pairs */
    int64_t *pairs;                  /* room for the callback's answer */
};

pw_lmemo *pw_lmemo_new(void) { return calloc(1, sizeof(pw_lmemo)); }

void pw_lmemo_free(pw_lmemo *lm) {
    if (!lm) return;
    free(lm->row); free(lm->ph); free(lm->off); free(lm->cnt); free(lm->pool);
    free(lm->pairs);
    free(lm);
}

static uint64_t lm_hash(int64_t row, int64_t ph) {
    uint64_t h = (uint64_t)row * 0x9E3779B97F4A7C15ULL ^ (uint64_t)ph * 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 31);
}

static int lm_grow(pw_lmemo *lm) {
    int64_t ncap = lm->cap ? 2 * lm->cap : 1024;
    int64_t *row = malloc(sizeof(int64_t) * (size_t)ncap), *ph = malloc(sizeof(int64_t) * (size_t)ncap);
    int64_t *off = malloc(sizeof(int64_t) * (size_t)ncap), *cnt = malloc(sizeof(int64_t) * (size_t)ncap);
    if (!row || !ph || !off || !cnt) { free(row); free(ph); free(off); free(cnt); return -1; }
    for (int64_t i = 0; i < ncap; i++) row[i] = -1;
    for (int64_t i = 0; i < lm->cap; i++) {
        if (lm->row[i] < 0) continue;
        uint64_t j = lm_hash(lm->row[i], lm->ph[i]) & (uint64_t)(ncap - 1);
        while (row[j] >= 0) j = (j + 1) & (uint64_t)(ncap - 1);
        row[j] = lm->row[i]; ph[j] = lm->ph[i]; off[j] = lm->off[i]; cnt[j] = lm->cnt[i];
    }
    free(lm->row); free(lm->ph); free(lm->off); free(lm->cnt);
    lm->row = row; lm->ph = ph; lm->off = off; lm->cnt = cnt; lm->cap = ncap;
    return 0;
}

/* 0, or < 0: the callback gave no answer (-1), too many candidates (-2), no memory (-3) */
int pw_later(const pw_mtables *m, pw_lmemo *lm, const int64_t *v, const int32_t *agents,
             int32_t na, int32_t n_units,
             int (*cb)(int32_t a, int32_t pc, const int32_t *phases, int32_t n,
                       int64_t *out, int32_t cap),
             int64_t *lw_off, int64_t *lw, int64_t *lw_row, int64_t *lw_set, int64_t *n_set) {
    for (int64_t k = 0; k < *n_set; k++) lw_row[lw_set[k]] = -1;
    *n_set = 0;
    uint8_t reinit[256];
    if (m->n_reinit > 256) return -2;
    memset(reinit, 0, sizeof reinit);
    for (int32_t i = 0; i < m->n_ini; i++) {
        int64_t b = m->ini_agent[i], pc = v[m->pc_pos[b]];
        if (pc == m->done) continue;
        int64_t row = m->pc_base[b] + pc;
        for (int64_t k = m->ini_off[row]; k < m->ini_off[row + 1]; k++) reinit[m->ini_arr[k]] = 1;
    }
    if (!lm->pairs && !(lm->pairs = malloc(sizeof(int64_t) * 2 * PW_LATER_PAIRS))) return -3;
    int64_t *pairs = lm->pairs;
    int64_t nlw = 0;
    lw_off[0] = 0;
    for (int32_t i = 0; i < na; i++) {
        int32_t a = agents[i];
        int64_t pc = v[m->pc_pos[a]], row = m->pc_base[a] + pc;
        int64_t lo = m->lc_off[row], hi = m->lc_off[row + 1];
        if (lo == hi) { lw_off[i + 1] = nlw; continue; }
        if (hi - lo > PW_LATER_MAX) return -2;
        int32_t phases[PW_LATER_MAX];
        int64_t key = 0;
        for (int64_t k = lo; k < hi; k++) {
            int64_t x = m->lc_arr[k] >= 0 && reinit[m->lc_arr[k]] ? -1
                        : ((v[m->lc_pos[k]] % m->phase_mod) + m->phase_mod) % m->phase_mod;
            phases[k - lo] = (int32_t)x;
            key |= (x + 1) << (3 * (k - lo));
        }
        if (lm->n * 2 >= lm->cap && lm_grow(lm)) return -3;
        uint64_t j = lm_hash(row, key) & (uint64_t)(lm->cap - 1);
        while (lm->row[j] >= 0 && !(lm->row[j] == row && lm->ph[j] == key))
            j = (j + 1) & (uint64_t)(lm->cap - 1);
        if (lm->row[j] < 0) {  /* new: ask */
            int np = cb(a, (int32_t)pc, phases, (int32_t)(hi - lo), pairs, PW_LATER_PAIRS);
            if (np < 0) return -1;
            if (lm->pool_n + 2 * np > lm->pool_cap) {
                int64_t nc = lm->pool_cap ? 2 * lm->pool_cap : 4096;
                while (nc < lm->pool_n + 2 * np) nc *= 2;
                int64_t *p = realloc(lm->pool, sizeof(int64_t) * (size_t)nc);
                if (!p) return -3;
                lm->pool = p; lm->pool_cap = nc;
            }
            memcpy(lm->pool + lm->pool_n, pairs, sizeof(int64_t) * (size_t)(2 * np));
            lm->row[j] = row; lm->ph[j] = key; lm->off[j] = lm->pool_n; lm->cnt[j] = np;
            lm->pool_n += 2 * np;
            lm->n++;
        }
        const int64_t *got = lm->pool + lm->off[j];
        int64_t first = nlw;
        for (int64_t k = 0; k < lm->cnt[j]; k++) {
            int64_t r = m->pc_base[a] + got[2 * k], b = got[2 * k + 1];
            lw_row[r] = b;
            lw_set[(*n_set)++] = r;
            int seen = 0;
            for (int64_t q = first; q < nlw; q++) if (lw[q] == b) { seen = 1; break; }
            if (!seen) lw[nlw++] = b;
        }
        lw_off[i + 1] = nlw;
    }
    for (int32_t i = na; i < n_units; i++) lw_off[i + 1] = nlw;
    return 0;
}
