/* The breadth-first search of the native engine (checker/native/search.py).
 *
 * Appended to the C that checker/native/ccode.py generates for one kernel, which
 * defines NK (state keys), SB (bytes of a packed state), INIT, PC_KEYS, pack, unpack,
 * canon (the representative under warp symmetry, or the identity) and expand (the
 * successors of a state, in the explicit engine's order, each handed to visit).  The search is the explicit engine's (checker/explicit.py, _bfs) step for
 * step: states are numbered in discovery order and expanded in that order; a violating
 * step is a candidate counterexample of length depth+1; a state with no step whose
 * warps have not all exited is a deadlock candidate; once a candidate of length L is
 * known, the search stops at the first state of depth L.  Python chooses among the
 * candidates and rebuilds the path from the parent links.
 *
 * Safe-step reduction (pp_set_reduce(1); checker/native/search.py): every step of a
 * state is still evaluated (violations, overflows and deadlocks are seen as above), but
 * where some warp -- lowest index first -- is at one of its safe points (is_safe, from
 * ccode.py, proven by checker/safesteps.py) with an enabled step, only that warp's
 * successors are kept: the reduced rule of certificate.certify_reduced.  Its theorem
 * needs the reduced graph acyclic, which pp_acyclic checks over the recorded edges.
 *
 * Stubborn sets (pp_set_reduce(2); checker/native/por.py): every step of a state is
 * evaluated and buffered with its outcome, then pp_set_por's callback -- the explicit
 * engine's Reducer, in the same state and over the same steps in the same order --
 * says which of them a stubborn set keeps; only those count (their violations, their
 * overflows, their successors).  As the explicit engine's Explorer: each successor has
 * its dead locals forgotten (forget, from ccode.py) and its interchangeable warps sorted
 * (canon_warps), and is expanded as that; its CTA renamings only key the visited set
 * (canon of a copy, kept in a second arena where CANON_CTA), so the stubborn sets follow
 * one run instead of jumping from CTA to CTA.
 */

enum { ST_DONE = 0, ST_FOUND = 1, ST_LIMIT = 2, ST_TIMEOUT = 3, ST_OVERFLOW = 4,
       ST_NOMEM = 5, ST_POR = 6 };

/* the stubborn-set callback: the state, its n buffered steps' transition ids; sets
 * keep[i] for the kept ones; nonzero: no answer (the search stops, ST_POR) */
typedef int (*pp_por_fn)(const int32_t *x, int n, const int32_t *tids, int8_t *keep);

static struct {
  uint8_t *arena;          /* packed states, SB bytes each, in discovery order */
  uint8_t *sarena;         /* the states as expanded, where they differ (stubborn sets
                              with CANON_CTA: arena holds the visited-set keys) */
  uint32_t *hashes;        /* hash of each state */
  int32_t *parent, *ptid, *depth;
  int64_t n, cap;          /* states stored, room */
  uint32_t *table;         /* open addressing: state id + 1, 0 = empty */
  uint64_t tmask;
  int64_t ntrans;
  int32_t maxdepth;
  int32_t cur, d, found_len, any;
  int64_t *cand; int64_t ncand, ccap;      /* (length, rank, state, transition) */
  int32_t *edges; int64_t nedges, ecap;    /* (source, target, transition) */
  int want_edges;
  int32_t ovf_state, ovf_tid;
  int nomem;
  int reduce;                              /* 1: safe steps, 2: stubborn sets */
  int32_t *rbuf, *rtid; int64_t rn, rcap;  /* a state's buffered successors */
  int8_t *rr, *rkeep; int32_t *rrank;      /* their outcomes and ranks; kept (2) */
  pp_por_fn por;
  uint8_t scratch[SB], scratch2[SB];
} G;

static uint32_t hash_bytes(const uint8_t *p) {
  uint64_t h = 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < SB; i += 8) {
    uint64_t c; memcpy(&c, p + i, 8);
    h ^= c; h *= 0xBF58476D1CE4E5B9ULL; h ^= h >> 31;
  }
  h ^= h >> 29;
  return (uint32_t)h;
}

static int grow_table(void) {
  uint64_t ncap = (G.tmask + 1) * 2;
  uint32_t *t = calloc(ncap, sizeof(uint32_t));
  if (!t) return 1;
  for (int64_t i = 0; i < G.n; i++) {
    uint64_t j = G.hashes[i] & (ncap - 1);
    while (t[j]) j = (j + 1) & (ncap - 1);
    t[j] = (uint32_t)(i + 1);
  }
  free(G.table); G.table = t; G.tmask = ncap - 1;
  return 0;
}

static int grow_states(void) {
  int64_t nc = G.cap ? G.cap * 2 : 1024;
  uint8_t *a = realloc(G.arena, (size_t)nc * SB); if (!a) return 1; G.arena = a;
  if (G.sarena) { a = realloc(G.sarena, (size_t)nc * SB); if (!a) return 1; G.sarena = a; }
  uint32_t *h = realloc(G.hashes, nc * sizeof(uint32_t)); if (!h) return 1; G.hashes = h;
  int32_t *p = realloc(G.parent, nc * sizeof(int32_t)); if (!p) return 1; G.parent = p;
  p = realloc(G.ptid, nc * sizeof(int32_t)); if (!p) return 1; G.ptid = p;
  p = realloc(G.depth, nc * sizeof(int32_t)); if (!p) return 1; G.depth = p;
  G.cap = nc;
  return 0;
}

/* the id of the packed state p, adding it (parent G.cur) when new, with s (or NULL:
 * p itself) as the state to expand; -1: out of memory */
static int64_t intern(const uint8_t *p, const uint8_t *s, int32_t tid) {
  uint32_t h = hash_bytes(p);
  uint64_t j = h & G.tmask;
  for (;;) {
    uint32_t e = G.table[j];
    if (!e) break;
    int64_t id = (int64_t)e - 1;
    if (G.hashes[id] == h && memcmp(G.arena + (size_t)id * SB, p, SB) == 0) return id;
    j = (j + 1) & G.tmask;
  }
  if (G.n == G.cap && grow_states()) return -1;
  if (G.n >= 0x7FFFFFF0LL) return -1;
  int64_t id = G.n++;
  memcpy(G.arena + (size_t)id * SB, p, SB);
  if (G.sarena) memcpy(G.sarena + (size_t)id * SB, s ? s : p, SB);
  G.hashes[id] = h;
  G.parent[id] = G.cur; G.ptid[id] = tid; G.depth[id] = G.cur < 0 ? 0 : G.d + 1;
  if (G.depth[id] > G.maxdepth) G.maxdepth = G.depth[id];
  G.table[j] = (uint32_t)(id + 1);
  if ((uint64_t)G.n * 2 > G.tmask && grow_table()) return -1;
  return id;
}

static int add_cand(int64_t len, int64_t rank, int64_t st, int64_t tid) {
  if (G.ncand == G.ccap) {
    int64_t nc = G.ccap ? G.ccap * 2 : 64;
    int64_t *c = realloc(G.cand, nc * 4 * sizeof(int64_t)); if (!c) return 1;
    G.cand = c; G.ccap = nc;
  }
  int64_t *c = G.cand + 4 * G.ncand++;
  c[0] = len; c[1] = rank; c[2] = st; c[3] = tid;
  return 0;
}

static int add_edge(int32_t s, int32_t t, int32_t tid) {
  if (G.nedges == G.ecap) {
    int64_t nc = G.ecap ? G.ecap * 2 : 1024;
    int32_t *e = realloc(G.edges, nc * 3 * sizeof(int32_t)); if (!e) return 1;
    G.edges = e; G.ecap = nc;
  }
  int32_t *e = G.edges + 3 * G.nedges++;
  e[0] = s; e[1] = t; e[2] = tid;
  return 0;
}

/* the stored form of a successor: its canonical form, or with stubborn sets its dead
 * locals forgotten and warps sorted (then the visited-set key is a copy's canon) */
static int64_t store(int32_t *y, int32_t tid) {
  if (G.reduce != 2) { canon(y); pack(y, G.scratch); return intern(G.scratch, NULL, tid); }
  forget(y);
  canon_warps(y);
  pack(y, G.scratch);
  if (!CANON_CTA) return intern(G.scratch, NULL, tid);
  int32_t z[NK];
  memcpy(z, y, sizeof z);
  canon(z);
  pack(z, G.scratch2);
  return intern(G.scratch2, G.scratch, tid);
}

static int take(int tid, int32_t *y) {
  int64_t id = store(y, tid);
  if (id < 0) { G.nomem = 1; return 1; }
  if (G.want_edges && add_edge(G.cur, (int32_t)id, tid)) { G.nomem = 1; return 1; }
  return 0;
}

PP_HIDDEN int visit(int tid, int r, int rank, int32_t *y) {
  G.any = 1;
  G.ntrans++;
  if (G.reduce == 2) goto buffer;  /* every outcome waits for the stubborn set */
  if (r == 3) { G.ovf_state = G.cur; G.ovf_tid = tid; return 1; }
  if (r == 2) {
    if (G.found_len < 0 || G.d + 1 <= G.found_len) {
      if (add_cand(G.d + 1, rank, G.cur, tid)) { G.nomem = 1; return 1; }
      G.found_len = G.d + 1;
    }
    return 0;
  }
buffer:
  if (G.reduce) {  /* kept until the state's every step is seen (reduced_take) */
    if (G.rn == G.rcap) {
      int64_t nc = G.rcap ? G.rcap * 2 : 64;
      int32_t *b = realloc(G.rbuf, (size_t)nc * NK * sizeof(int32_t));
      if (!b) { G.nomem = 1; return 1; }
      G.rbuf = b;
      int32_t *t = realloc(G.rtid, (size_t)nc * sizeof(int32_t));
      if (!t) { G.nomem = 1; return 1; }
      G.rtid = t;
      t = realloc(G.rrank, (size_t)nc * sizeof(int32_t));
      if (!t) { G.nomem = 1; return 1; }
      G.rrank = t;
      int8_t *r8 = realloc(G.rr, (size_t)nc);
      if (!r8) { G.nomem = 1; return 1; }
      G.rr = r8;
      r8 = realloc(G.rkeep, (size_t)nc);
      if (!r8) { G.nomem = 1; return 1; }
      G.rkeep = r8;
      G.rcap = nc;
    }
    memcpy(G.rbuf + (size_t)G.rn * NK, y, NK * sizeof(int32_t));
    G.rr[G.rn] = (int8_t)r; G.rrank[G.rn] = rank;
    G.rtid[G.rn++] = tid;
    return 0;
  }
  return take(tid, y);
}

/* the stubborn set of x among its buffered steps (the callback's answer): its
 * violations are candidates, an overflow stops the search, the rest are taken.
 * Returns 0, or the ST_* that stops the search. */
static int stubborn_take(const int32_t *x) {
  if (!G.rn) return 0;
  memset(G.rkeep, 0, (size_t)G.rn);
  if (G.por(x, (int)G.rn, G.rtid, G.rkeep)) return ST_POR;
  for (int64_t i = 0; i < G.rn; i++) {
    if (!G.rkeep[i]) continue;
    if (G.rr[i] == 3) { G.ovf_state = G.cur; G.ovf_tid = G.rtid[i]; return ST_OVERFLOW; }
    if (G.rr[i] == 2) {
      if (G.found_len < 0 || G.d + 1 <= G.found_len) {
        if (add_cand(G.d + 1, G.rrank[i], G.cur, G.rtid[i])) return ST_NOMEM;
        G.found_len = G.d + 1;
      }
      continue;
    }
    if (take(G.rtid[i], G.rbuf + (size_t)i * NK)) return ST_NOMEM;
  }
  G.rn = 0;
  return 0;
}

/* the reduced rule over the buffered successors of x: the lowest warp at a safe point
 * with an enabled step moves alone, else every step; 1 when out of memory */
static int reduced_take(const int32_t *x) {
  int only = -1;
  for (int a = 0; a < NAGENTS && only < 0; a++) {
    if (!is_safe(a, x[PC_KEYS[a]])) continue;
    for (int64_t i = 0; i < G.rn; i++) if (TACT[G.rtid[i]] == a) { only = a; break; }
  }
  for (int64_t i = 0; i < G.rn; i++) {
    if (only >= 0 && TACT[G.rtid[i]] != only) continue;
    if (take(G.rtid[i], G.rbuf + (size_t)i * NK)) return 1;
  }
  G.rn = 0;
  return 0;
}

void pp_set_reduce(int on) { G.reduce = on; }
void pp_set_por(pp_por_fn f) { G.por = f; }

/* 1 when the graph of the recorded edges has no cycle (Kahn's algorithm); edges are
 * recorded in the order of their source states.  -1: out of memory. */
int pp_acyclic(void) {
  int64_t n = G.n, ne = G.nedges;
  int64_t *off = calloc((size_t)n + 1, sizeof(int64_t));
  int64_t *indeg = calloc((size_t)n, sizeof(int64_t));
  int64_t *todo = malloc(((size_t)n + 1) * sizeof(int64_t));
  if (!off || !indeg || !todo) { free(off); free(indeg); free(todo); return -1; }
  for (int64_t j = 0; j < ne; j++) { off[G.edges[3 * j] + 1]++; indeg[G.edges[3 * j + 1]]++; }
  for (int64_t i = 0; i < n; i++) off[i + 1] += off[i];
  int64_t top = 0, seen = 0;
  for (int64_t i = 0; i < n; i++) if (!indeg[i]) todo[top++] = i;
  while (top) {
    int64_t v = todo[--top];
    seen++;
    for (int64_t j = off[v]; j < off[v + 1]; j++)
      if (--indeg[G.edges[3 * j + 1]] == 0) todo[top++] = G.edges[3 * j + 1];
  }
  free(off); free(indeg); free(todo);
  return seen == n;
}

static double now(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void pp_free(void) {
  free(G.arena); free(G.hashes); free(G.parent); free(G.ptid); free(G.depth);
  free(G.table); free(G.cand); free(G.edges); free(G.rbuf); free(G.rtid);
  free(G.sarena); free(G.rr); free(G.rkeep); free(G.rrank);
  int reduce = G.reduce;
  pp_por_fn por = G.por;
  memset(&G, 0, sizeof(G));
  G.reduce = reduce; G.por = por;
}

/* Search from INIT.  deadlock_rank: the rank of a deadlock candidate.  Returns ST_*. */
int pp_search(int64_t max_states, double timeout, int want_edges, int deadlock_rank) {
  int32_t x[NK], y[NK];
  pp_free();
  G.want_edges = want_edges;
  G.found_len = -1; G.cur = -1; G.ovf_state = -1; G.ovf_tid = -1;
  G.table = calloc(1024, sizeof(uint32_t)); if (!G.table) return ST_NOMEM;
  G.tmask = 1023;
  if (G.reduce == 2 && !G.por) return ST_POR;
  if (G.reduce == 2 && CANON_CTA) {  /* a state to expand besides each key */
    G.sarena = malloc(1); if (!G.sarena) return ST_NOMEM;
  }
  memcpy(x, INIT, sizeof(x));
  if (store(x, -1) < 0) return ST_NOMEM;
  double t0 = now();
  for (int64_t si = 0; si < G.n; si++) {
    int32_t d = G.depth[si];
    if (G.found_len >= 0 && d >= G.found_len) break;
    G.cur = (int32_t)si; G.d = d; G.any = 0;
    unpack((G.sarena ? G.sarena : G.arena) + (size_t)si * SB, x);
    G.rn = 0;
    if (expand(x, y)) return G.nomem ? ST_NOMEM : ST_OVERFLOW;
    if (G.reduce == 1 && reduced_take(x)) return ST_NOMEM;
    if (G.reduce == 2) { int rc = stubborn_take(x); if (rc) return rc; }
    if (!G.any) {
      int done = 1;
      for (int a = 0; a < NAGENTS; a++) if (x[PC_KEYS[a]] != DONE_PC) { done = 0; break; }
      if (!done) {
        if (add_cand(d, deadlock_rank, si, -1)) return ST_NOMEM;
        if (G.found_len < 0 || d < G.found_len) G.found_len = d;
      }
    }
    if (G.n > max_states && G.found_len < 0) return ST_LIMIT;
    /* the clock every 1024 states, every 64 where each state waits for the callback */
    if ((si & (G.reduce == 2 ? 63 : 1023)) == (G.reduce == 2 ? 63 : 1023) &&
        G.found_len < 0 && now() - t0 > timeout) return ST_TIMEOUT;
  }
  return G.ncand ? ST_FOUND : ST_DONE;
}

int64_t pp_nstates(void) { return G.n; }
int64_t pp_ntrans(void) { return G.ntrans; }
int32_t pp_maxdepth(void) { return G.maxdepth; }
int32_t pp_cur_depth(void) { return G.d; }
int64_t pp_ncand(void) { return G.ncand; }
const int64_t *pp_cands(void) { return G.cand; }
int64_t pp_nedges(void) { return G.nedges; }
const int32_t *pp_edges(void) { return G.edges; }
int32_t pp_parent(int64_t id) { return G.parent[id]; }
int32_t pp_ptid(int64_t id) { return G.ptid[id]; }
int32_t pp_depth(int64_t id) { return G.depth[id]; }
int32_t pp_ovf_state(void) { return G.ovf_state; }
int32_t pp_ovf_tid(void) { return G.ovf_tid; }
void pp_state(int64_t id, int32_t *out) {
  unpack((G.sarena ? G.sarena : G.arena) + (size_t)id * SB, out);
}
int pp_nkeys(void) { return NK; }
