"""Hypothesis strategies for random *valid* pipeline configurations and single mutations.

Every cutlass.pipeline class the model knows gets a small program generator: a kernel
skeleton (.pipe source text) with correct role programs -- stage counts, trip counts,
group sizes derived the way CUTLASS derives them, cluster shapes where the class supports
them, the state API or the participants API, ``try_wait``/``try_acquire`` tokens,
``elect_one()`` where the signalling needs it, persistent outer tile loops.  A valid
program must check SAFE/PROVEN.

``mutations(cfg)`` lists the single mutations that apply to a configuration, each with
the verdict it must produce: ``VIOLATED`` with one of a set of plausible properties, or
a ``ConfigError`` whose message contains a given fragment.  ``render(cfg, mutation)``
produces the mutated source.  The mutations follow the bug lessons
(``shared/research/bug-lessons.md``): a wrong group size (P1), a TMA load skipped after
``producer_acquire`` (P2), a tx_count off by some bytes (P4), a missing release, a wrong
initial phase (P8 / lesson 1), per-tile pipeline states (P7 / lesson 6), a skipped
producer tail in a cluster (lesson 5), a multicast mask bit outside the cluster
(lesson 4), named-barrier misuse (lesson 7), ...

Generated configurations are kept small (at most two CTAs and four warps per CTA, a
handful of trip counts) so that the explicit engine with ``reduce=False`` explores each
one well under a second.

Public API::

    configs(cls=None)          strategy of Config (valid configurations)
    programs(cls=None)         strategy of Program (valid source + expectation PROVEN/SAFE)
    mutants(cls=None)          strategy of Program (one mutation + expected verdict)
    mutations(cfg)             list of (name, Expected) applicable to cfg
    render(cfg, mutation=None) .pipe source text
    build_system(source)       compile to a model.system.System
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Optional

from hypothesis import strategies as st

# --------------------------------------------------------------------------- property sets

DEADLOCK = "deadlock"
#: what a counting error (too few expected arrivals, an extra arrival) may show up as:
#: the extra arrival overflows the pending count, lands in the next phase before anyone
#: observed the completed one, or lets the producer overwrite a stage still being read.
OVER_ARRIVAL = frozenset({"arrival-overflow", "phase-overrun", "overwrite-before-release",
                          "read-before-full", "stale-parity"})
#: a wait that passes too early or too late
PHASE_CONFUSION = frozenset({"read-before-full", "overwrite-before-release", "stale-parity",
                             "deadlock", "phase-overrun", "arrival-overflow"})
EXIT_RACE = frozenset({"remote-op-to-exited-cta", "dangling-arrive-at-exit"})

CLASSES = (
    "PipelineAsync", "PipelineCpAsync", "PipelineTmaAsync", "PipelineTmaUmma",
    "PipelineAsyncUmma", "PipelineUmmaAsync", "PipelineClcFetchAsync",
    "PipelineTmaMultiConsumersAsync", "PipelineTmaStore", "PipelineOrder", "NamedBarrier",
    "TmaStoreFence",
)


@dataclass(frozen=True)
class Expected:
    """What a checked program must give.

    ``kind``: ``"ok"`` (SAFE or PROVEN), ``"violated"`` (one of ``props``) or
    ``"config_error"`` (exit code 2, the message contains ``message``).
    """

    kind: str
    props: frozenset = frozenset()
    message: str = ""

    def __str__(self) -> str:
        if self.kind == "ok":
            return "SAFE/PROVEN"
        if self.kind == "violated":
            return "VIOLATED " + "|".join(sorted(self.props))
        return f"ConfigError containing {self.message!r}"


OK = Expected("ok")


def violated(*props: Any) -> Expected:
    out: set[str] = set()
    for p in props:
        if isinstance(p, (set, frozenset, tuple, list)):
            out |= set(p)
        else:
            out.add(p)
    return Expected("violated", frozenset(out))


def config_error(message: str) -> Expected:
    return Expected("config_error", message=message)


# --------------------------------------------------------------------------- configurations


@dataclass(frozen=True)
class Config:
    """One random configuration.  Fields a class does not use keep their defaults.

    ``psig``/``csig``: how producers/consumers signal where the class lets the kernel
    choose -- ``"thread"`` (every lane arrives; the group counts threads), ``"elect"``
    (``with elect_one():`` around the call; the group counts warps), ``"fa"``
    (FlashAttention's ``elect_one_commit``/``elect_one_release`` options).
    """

    cls: str
    stages: int = 2
    k_tiles: int = 2
    tiles: int = 1                   # persistent outer loop (pipeline state carried)
    api: str = "state"               # "state" | "participants" | "index_phase"
    try_wait: bool = False           # try_wait / try_acquire tokens
    defer_sync: bool = False         # defer_sync=True + pipeline_init_arrive/wait
    pw: int = 1                      # producer warps
    cw: int = 1                      # consumer warps
    psig: str = "thread"
    csig: str = "thread"
    cluster: tuple[int, int] = (1, 1)
    v: int = 1                       # CTA-pair mode (2 = cta_group::2)
    a_bytes: int = 2048
    b_bytes: int = 2048
    two_loads: bool = False          # separate A and B loads (cluster 1)
    extra_tx: int = 0                # FlashAttention extra_tx_count
    barrier_id: int = 1              # NamedBarrier
    length: int = 2                  # PipelineOrder groups

    @property
    def cluster_size(self) -> int:
        return self.cluster[0] * self.cluster[1]

    @property
    def n_iters(self) -> int:
        return self.tiles * self.k_tiles

    def describe(self) -> str:
        defaults = Config(self.cls)
        parts = [f"{k}={getattr(self, k)!r}" for k in self.__dataclass_fields__
                 if k != "cls" and getattr(self, k) != getattr(defaults, k)]
        return f"{self.cls}(" + ", ".join(parts) + ")"


@dataclass(frozen=True)
class Program:
    cfg: Config
    mutation: Optional[str]
    source: str
    expected: Expected

    def describe(self) -> str:
        m = f" with mutation {self.mutation}" if self.mutation else ""
        return f"{self.cfg.describe()}{m}: expect {self.expected}"


# --------------------------------------------------------------------------- source builder


class Src:
    """Indented source text."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, line: str = "") -> "Src":
        self.lines.append(("    " * self.depth + line) if line else "")
        return self

    def indent(self) -> "_Indent":
        return _Indent(self)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class _Indent:
    def __init__(self, s: Src):
        self.s = s

    def __enter__(self) -> None:
        self.s.depth += 1

    def __exit__(self, *a: Any) -> None:
        self.s.depth -= 1


def _warps(first: int, n: int) -> str:
    return "[" + ", ".join(str(w) for w in range(first, first + n)) + "]"


def _header(s: Src, name: str, cfg: Config, block: int, m: Optional[str],
            extra_params: str = "") -> None:
    stages = 0 if m == "zero_stages" else cfg.stages
    s("# generated by tests/generators.py: " + cfg.describe() + (f" mutation={m}" if m else ""))
    s("@cute.kernel")
    s(f"def {name}(stages: int = {stages}, k_tiles: int = {cfg.k_tiles}, "
      f"tiles: int = {cfg.tiles}{extra_params}):")
    s.depth += 1
    cm, cn = cfg.cluster
    s(f"launch(block={block}, cluster=({cm}, {cn}, 1))")


def _role_warps(first: int, n: int, m: Optional[str], num_warps: int, is_first_role: bool) -> str:
    """A role's warp list; mutation ``bad_role_warp`` names a warp beyond the block."""
    if m == "bad_role_warp" and is_first_role:
        return f"[{num_warps}]"
    return _warps(first, n)


# ---- loops shared by the mbarrier classes ----------------------------------------------


def _loop_open(s: Src, cfg: Config, per_tile: Optional[Callable[[], None]] = None,
               constexpr: bool = False) -> None:
    """``for t in range(tiles): [per_tile()] for k in range(k_tiles):`` (with
    ``cutlass.range_constexpr``: loops unrolled while tracing, which carry the state of
    Python objects such as PipelineOrder's)."""
    rng = "cutlass.range_constexpr" if constexpr else "range"
    s(f"for t in {rng}(tiles):")
    s.depth += 1
    if per_tile is not None:
        per_tile()
    s(f"for k in {rng}(k_tiles):")
    s.depth += 1


def _loop_close(s: Src) -> None:
    s.depth -= 2


def _state_init(s: Src, var: str, user: str, cfg: Config, m: Optional[str],
                side: str) -> None:
    """``state = make_pipeline_state(...)`` (before the tile loop)."""
    if cfg.api != "state":
        return
    if m == "per_tile_state":
        return  # made inside the tile loop instead
    utype = user
    if m == "wrong_phase_producer" and side == "producer":
        utype = "Consumer"
    if m == "wrong_phase_consumer" and side == "consumer":
        utype = "Producer"
    s(f"{var} = make_pipeline_state(PipelineUserType.{utype}, stages)")


def _per_tile_state(s: Src, var: str, user: str, cfg: Config, m: Optional[str]) -> None:
    if cfg.api == "state" and m == "per_tile_state":
        s(f"{var} = make_pipeline_state(PipelineUserType.{user}, stages)")


def _index_phase(s: Src, cfg: Config, m: Optional[str], producer: bool) -> None:
    """FlashAttention-style explicit (index, phase) from a loop counter (api index_phase).

    Correct: a running counter over all tiles.  Mutation ``parity_from_tile_counter``:
    the counter restarts every tile (correct only when k_tiles is a multiple of
    2 * stages)."""
    if m == "parity_from_tile_counter":
        s("it = k")
    else:
        s("it = t * k_tiles + k")
    s("idx = it % stages")
    if producer:
        s("ph = (it // stages) % 2 ^ 1")
    else:
        s("ph = (it // stages) % 2")


# --------------------------------------------------------------------------- PipelineAsync


def _group(n: int) -> str:
    return f"CooperativeGroup(Agent.Thread, {n})"


def _async_counts(cfg: Config) -> tuple[int, int]:
    p = 32 * cfg.pw if cfg.psig == "thread" else cfg.pw
    c = 32 * cfg.cw if cfg.csig == "thread" else cfg.cw
    return p, c


def _count_mut(n: int, m: Optional[str], plus: str, minus: str) -> int:
    if m == plus:
        return n + 1
    if m == minus:
        return n - 1
    return n


def _producer_mbar_body(s: Src, cfg: Config, m: Optional[str], pipe: str,
                        data: Callable[[Src, str], None],
                        commit: bool = True, acquire_kw: str = "") -> None:
    """The producer loop of a full/empty pipeline: acquire, data, commit, advance."""
    elect_commit = cfg.psig == "elect"
    if cfg.api == "participants":
        s(f"producer, _ = {pipe}.make_participants()" if cfg.cls != "PipelineTmaMultiConsumersAsync"
          else f"producer, _, _ = {pipe}.make_participants()")
    else:
        _state_init(s, "state", "Producer", cfg, m, "producer")
    _loop_open(s, cfg, lambda: _per_tile_state(s, "state", "Producer", cfg, m))
    if cfg.api == "participants":
        if m != "missing_acquire":
            if cfg.try_wait:
                s("token = producer.try_acquire()")
                s(f"handle = producer.acquire_and_advance(token{acquire_kw})")
            else:
                s(f"handle = producer.acquire_and_advance({acquire_kw.lstrip(', ')})")
        else:
            s("handle = producer.current_handle()")
            s("producer.advance()")
        ref = "handle"
    elif cfg.api == "index_phase":
        _index_phase(s, cfg, m, producer=True)
        if m != "missing_acquire":
            s(f"{pipe}.producer_acquire_w_index_phase(idx, ph{acquire_kw})")
        s("st = PipelineState(stages, 0, idx, ph)")
        ref = "st"
    else:
        if m != "missing_acquire":
            if cfg.try_wait:
                s(f"token = {pipe}.producer_try_acquire(state)")
                s(f"{pipe}.producer_acquire(state, token{acquire_kw})")
            else:
                s(f"{pipe}.producer_acquire(state{acquire_kw})")
        ref = "state"
    data(s, ref)
    if commit and m != "missing_commit":
        if cfg.api == "participants":
            call = "handle.commit()"
        elif cfg.api == "index_phase":
            call = f"{pipe}.producer_commit_w_index(idx)"
        else:
            call = f"{pipe}.producer_commit(state)"
        if elect_commit and m != "no_elect_commit":
            s("with elect_one():")
            with s.indent():
                s(call)
        else:
            s(call)
    if cfg.api == "state":
        s("state.advance()")
    _loop_close(s)
    if m != "no_tail":
        if cfg.api == "participants":
            s("producer.tail()")
        elif cfg.api == "state":
            s(f"{pipe}.producer_tail(state)")
        else:
            s("st = PipelineState(stages, 0, tiles * k_tiles % stages, "
              "(tiles * k_tiles // stages) % 2 ^ 1)")
            s(f"{pipe}.producer_tail(st)")


def _consumer_mbar_body(s: Src, cfg: Config, m: Optional[str], pipe: str,
                        data: Callable[[Src, str], None],
                        release: Callable[[Src, str], None]) -> None:
    """The consumer loop: wait, data, release, advance."""
    if cfg.api == "participants":
        s(f"_, consumer = {pipe}.make_participants()" if cfg.cls != "PipelineTmaMultiConsumersAsync"
          else f"_, consumer, _ = {pipe}.make_participants()")
    else:
        _state_init(s, "state", "Consumer", cfg, m, "consumer")
    _loop_open(s, cfg, lambda: _per_tile_state(s, "state", "Consumer", cfg, m))
    if cfg.api == "participants":
        if m == "missing_wait":
            s("handle = consumer.current_handle()")
            s("consumer.advance()")
        elif cfg.try_wait:
            s("token = consumer.try_wait()")
            s("handle = consumer.wait_and_advance(token)")
        else:
            s("handle = consumer.wait_and_advance()")
        ref = "handle"
    elif cfg.api == "index_phase":
        _index_phase(s, cfg, m, producer=False)
        if m != "missing_wait":
            s(f"{pipe}.consumer_wait_w_index_phase(idx, ph)")
        s("st = PipelineState(stages, 0, idx, ph)")
        ref = "st"
    else:
        if m != "missing_wait":
            if cfg.try_wait:
                s(f"token = {pipe}.consumer_try_wait(state)")
                s(f"{pipe}.consumer_wait(state, token)")
            else:
                s(f"{pipe}.consumer_wait(state)")
        ref = "state"
    data(s, ref)
    if m != "missing_release":
        release(s, "idx" if ref == "st" else ref)
    if cfg.api == "state":
        s("state.advance()")
    _loop_close(s)


def _release_call(cfg: Config, pipe: str, ref: str) -> str:
    if ref == "handle":
        return "handle.release()"
    if ref == "idx":
        return f"{pipe}.consumer_release_w_index(idx)"
    return f"{pipe}.consumer_release(state)"


def _elected(s: Src, yes: bool, line: str) -> None:
    if yes:
        s("with elect_one():")
        with s.indent():
            s(line)
    else:
        s(line)


def _init_sync(s: Src, cfg: Config, m: Optional[str]) -> None:
    """``pipeline_init_arrive/wait`` after a ``defer_sync=True`` create."""
    if not cfg.defer_sync or m == "missing_init_sync":
        return
    if cfg.cluster_size > 1:
        cm, cn = cfg.cluster
        s(f"pipeline_init_arrive(cluster_shape_mn=({cm}, {cn}))")
        s(f"pipeline_init_wait(cluster_shape_mn=({cm}, {cn}))")
    else:
        s("pipeline_init_arrive()")
        s("pipeline_init_wait()")


def _stages_kw(m: Optional[str]) -> str:
    return "num_stages=stages,"


def render_pipeline_async(cfg: Config, m: Optional[str]) -> str:
    s = Src()
    num_warps = cfg.pw + cfg.cw
    _header(s, "gen_pipeline_async", cfg, 32 * num_warps, m)
    p, c = _async_counts(cfg)
    p = _count_mut(p, m, "producer_count_plus", "producer_count_minus")
    c = _count_mut(c, m, "consumer_count_plus", "consumer_count_minus")
    cls = cfg.cls
    s(f"pipe = {cls}.create(")
    with s.indent():
        s(_stages_kw(m))
        s(f"producer_group={_group(p)},")
        s(f"consumer_group={_group(c)},")
        if cfg.psig == "fa":
            s("elect_one_commit=True,")
        if cfg.csig == "fa":
            s("elect_one_release=True,")
        if cfg.defer_sync:
            s("defer_sync=True,")
    s(")")
    _init_sync(s, cfg, m)

    def pdata(s: Src, ref: str) -> None:
        if cls == "PipelineCpAsync":
            s(f"cp_async(pipe, {ref})")
        else:
            s(f"write(pipe, {ref})")

    def cdata(s: Src, ref: str) -> None:
        s(f"read(pipe, {ref})")

    def rel(s: Src, ref: str) -> None:
        _elected(s, cfg.csig == "elect" and m != "no_elect_release",
                 _release_call(cfg, "pipe", ref))

    s(f"with role(\"producer\", warps={_role_warps(0, cfg.pw, m, num_warps, True)}):")
    with s.indent():
        _producer_mbar_body(s, cfg, m, "pipe", pdata)
    s(f"with role(\"consumer\", warps={_warps(cfg.pw, cfg.cw)}):")
    with s.indent():
        _consumer_mbar_body(s, cfg, m, "pipe", cdata, rel)
    return s.text()


# --------------------------------------------------------------------------- TMA producers


def _tma_layout(s: Src, cfg: Config) -> None:
    cm, cn = cfg.cluster
    if cfg.v == 2:
        s(f"cta_layout = cute.tiled_divide(cute.make_layout(({cm}, {cn}, 1)), (2,))")
    else:
        s(f"cta_layout = cute.make_layout((1, {cm}, {cn}, 1))")


def _tma_masks(s: Src, cfg: Config) -> None:
    if cfg.cluster_size > 1 and cfg.v == 1:
        s("rank = cute.arch.block_idx_in_cluster()")
        s("coord = cta_layout.get_flat_coord(rank)")
        s("a_mask = cpasync.create_tma_multicast_mask(cta_layout, coord, mcast_mode=2)")
        s("b_mask = cpasync.create_tma_multicast_mask(cta_layout, coord, mcast_mode=1)")


def _tma_tx(cfg: Config, m: Optional[str]) -> int:
    tx = cfg.a_bytes + cfg.b_bytes
    if m == "tx_plus":
        tx += 16
    elif m == "tx_minus":
        tx -= 32
    elif m == "tx_too_large":
        tx = 1 << 20
    return tx


def _tma_loads(s: Src, cfg: Config, m: Optional[str], pipe: str, ref: str) -> None:
    """The TMA loads of one stage (per issuing CTA).

    Cluster of one: one load of A+B bytes, or two loads.  Multicast cluster (V == 1):
    A split over the cluster row (mode 2 mask), B over the column (mode 1 mask): every
    CTA receives A + B bytes.  2-CTA (V == 2): each CTA of the pair loads half of A+B;
    all bytes complete on the leader's barrier."""
    cm, cn = cfg.cluster
    if m == "skip_load":
        s("if t == tiles - 1 and k == k_tiles - 1:")
        with s.indent():
            s("pass")
        s("else:")
        s.depth += 1
    outside = 1 << cfg.cluster_size  # a CTA rank beyond the cluster
    if cfg.v == 2:
        half = (cfg.a_bytes + cfg.b_bytes) // 2
        mask = f", mcast_mask={1 | outside}" if m == "mask_outside_cluster" else ""
        s(f"tma_load({pipe}, {ref}, bytes={half}{mask})")
    elif cfg.cluster_size > 1:
        am = f"a_mask | {outside}" if m == "mask_outside_cluster" else "a_mask"
        s(f"tma_load({pipe}, {ref}, bytes={cfg.a_bytes // cn}, mcast_mask={am})")
        s(f"tma_load({pipe}, {ref}, bytes={cfg.b_bytes // cm}, mcast_mask=b_mask)")
    else:
        mask = f", mcast_mask={1 | outside}" if m == "mask_outside_cluster" else ""
        if cfg.two_loads:
            s(f"tma_load({pipe}, {ref}, bytes={cfg.a_bytes}{mask})")
            s(f"tma_load({pipe}, {ref}, bytes={cfg.b_bytes})")
        else:
            s(f"tma_load({pipe}, {ref}, bytes={cfg.a_bytes + cfg.b_bytes}{mask})")
    if cfg.extra_tx:
        s(f"tma_load({pipe}, {ref}, bytes={cfg.extra_tx})")
    if m == "skip_load":
        s.depth -= 1


def _tma_acquire_kw(cfg: Config) -> str:
    return f", extra_tx_count={cfg.extra_tx}" if cfg.extra_tx else ""


def render_pipeline_tma_async(cfg: Config, m: Optional[str]) -> str:
    s = Src()
    num_warps = 1 + cfg.cw
    _header(s, "gen_pipeline_tma_async", cfg, 32 * num_warps, m)
    cm, cn = cfg.cluster
    _tma_layout(s, cfg)
    c = (cm + cn - 1) * cfg.cw
    p = _count_mut(1, m, "producer_count_plus", "producer_count_minus")
    c = _count_mut(c, m, "consumer_count_plus", "consumer_count_minus")
    s("ab = PipelineTmaAsync.create(")
    with s.indent():
        s(_stages_kw(m))
        s(f"producer_group={_group(p)},")
        s(f"consumer_group={_group(c)},")
        s(f"tx_count={_tma_tx(cfg, m)},")
        s("cta_layout_vmnk=cta_layout,")
        if cfg.defer_sync:
            s("defer_sync=True,")
    s(")")
    _init_sync(s, cfg, m)
    _tma_masks(s, cfg)

    def pdata(s: Src, ref: str) -> None:
        _tma_loads(s, cfg, m, "ab", ref)

    def cdata(s: Src, ref: str) -> None:
        s(f"read(ab, {ref})")

    def rel(s: Src, ref: str) -> None:
        s(_release_call(cfg, "ab", ref))

    s(f"with role(\"dma\", warps={_role_warps(0, 1, m, num_warps, True)}):")
    with s.indent():
        if m == "elect_around_acquire":
            _producer_elect_around(s, cfg, "ab", pdata)
        else:
            _producer_mbar_body(s, cfg, m, "ab", pdata, commit=cfg.api != "index_phase",
                                acquire_kw=_tma_acquire_kw(cfg))
    s(f"with role(\"mma\", warps={_warps(1, cfg.cw)}):")
    with s.indent():
        _consumer_mbar_body(s, cfg, m, "ab", cdata, rel)
    return s.text()


def _producer_elect_around(s: Src, cfg: Config, pipe: str,
                           data: Callable[[Src, str], None]) -> None:
    """Mutation: the producer wraps ``producer_acquire`` in its own ``elect_one()``;
    the library elects a lane itself, so elect.sync runs with one lane (elect-misuse)."""
    s("state = make_pipeline_state(PipelineUserType.Producer, stages)")
    _loop_open(s, cfg)
    s("with elect_one():")
    with s.indent():
        s(f"{pipe}.producer_acquire(state)")
    data(s, "state")
    s("state.advance()")
    _loop_close(s)
    s(f"{pipe}.producer_tail(state)")


def render_pipeline_tma_umma(cfg: Config, m: Optional[str]) -> str:
    s = Src()
    num_warps = 2
    _header(s, "gen_pipeline_tma_umma", cfg, 64, m)
    cm, cn = cfg.cluster
    _tma_layout(s, cfg)
    # empty: one tcgen05.commit per MMA warp per CTA that multicasts to this CTA
    c = 1 if cfg.v == 2 else (cm + cn - 1)
    p = _count_mut(1, m, "producer_count_plus", "producer_count_minus")
    c = _count_mut(c, m, "consumer_count_plus", "consumer_count_minus")
    s("ab = PipelineTmaUmma.create(")
    with s.indent():
        s(_stages_kw(m))
        s(f"producer_group={_group(p)},")
        s(f"consumer_group={_group(c)},")
        s(f"tx_count={_tma_tx(cfg, m)},")
        s("cta_layout_vmnk=cta_layout,")
        if cfg.defer_sync:
            s("defer_sync=True,")
    s(")")
    _init_sync(s, cfg, m)
    _tma_masks(s, cfg)

    def pdata(s: Src, ref: str) -> None:
        _tma_loads(s, cfg, m, "ab", ref)

    def cdata(s: Src, ref: str) -> None:
        s(f"tcgen05_mma(ab, {ref})")

    def rel(s: Src, ref: str) -> None:
        s(_release_call(cfg, "ab", ref))

    s(f"with role(\"tma\", warps={_role_warps(0, 1, m, num_warps, True)}):")
    with s.indent():
        if m == "elect_around_acquire":
            _producer_elect_around(s, cfg, "ab", pdata)
        else:
            _producer_mbar_body(s, cfg, m, "ab", pdata, commit=cfg.api != "index_phase",
                                acquire_kw=_tma_acquire_kw(cfg))
    s("with role(\"mma\", warps=[1]):")
    with s.indent():
        if cfg.v == 2:
            s("if ab.is_leader_cta:")
            s.depth += 1
        _consumer_mbar_body(s, cfg, m, "ab", cdata, rel)
        if cfg.v == 2:
            s.depth -= 1
    return s.text()


def render_pipeline_tma_multi_consumers(cfg: Config, m: Optional[str]) -> str:
    """A TMA warp, one tcgen05 MMA warp and ``cw`` AsyncThread warps sharing ``empty``.

    ``csig == "thread"``: the legacy per-lane signalling (a Thread group of 32 * cw;
    every lane arrives locally); otherwise lane 0 of every async warp arrives."""
    s = Src()
    num_warps = 2 + cfg.cw
    _header(s, "gen_pipeline_tma_multi_consumers", cfg, 32 * num_warps, m)
    s("cta_layout = cute.make_layout((1, 1, 1, 1))")
    n_async = 32 * cfg.cw if cfg.csig == "thread" else cfg.cw
    n_async = _count_mut(n_async, m, "consumer_count_plus", "consumer_count_minus")
    p = _count_mut(1, m, "producer_count_plus", "producer_count_minus")
    s("ab = PipelineTmaMultiConsumersAsync.create(")
    with s.indent():
        s(_stages_kw(m))
        s(f"producer_group={_group(p)},")
        s(f"consumer_group_umma={_group(1)},")
        s(f"consumer_group_async={_group(n_async)},")
        s(f"tx_count={_tma_tx(cfg, m)},")
        s("cta_layout_vmnk=cta_layout,")
        if cfg.defer_sync:
            s("defer_sync=True,")
    s(")")
    _init_sync(s, cfg, m)
    cfg_state = replace(cfg, api="state") if cfg.api == "index_phase" else cfg

    def pdata(s: Src, ref: str) -> None:
        _tma_loads(s, cfg, m, "ab", ref)

    s(f"with role(\"tma\", warps={_role_warps(0, 1, m, num_warps, True)}):")
    with s.indent():
        if m == "elect_around_acquire":
            _producer_elect_around(s, cfg, "ab", pdata)
        else:
            _producer_mbar_body(s, cfg_state, m, "ab", pdata)

    def mma_data(s: Src, ref: str) -> None:
        s(f"tcgen05_mma(ab, {ref})")

    def mma_rel(s: Src, ref: str) -> None:
        if ref == "handle":
            s("handle.release()")
        else:
            s("ab.consumer_release(state, PipelineOp.TCGen05Mma)")

    s("with role(\"mma\", warps=[1]):")
    with s.indent():
        _consumer_mbar_body(s, cfg_state, m if m != "missing_release" else None, "ab",
                            mma_data, mma_rel)

    def epi_data(s: Src, ref: str) -> None:
        s(f"read(ab, {ref})")

    def epi_rel(s: Src, ref: str) -> None:
        # make_participants' consumer releases with the UMMA op: async warps call the
        # pipeline directly with PipelineOp.AsyncThread (research note 6.10)
        if ref == "handle":
            s("handle.release(op_type=PipelineOp.AsyncThread)")
        else:
            s("ab.consumer_release(state, PipelineOp.AsyncThread)")

    s(f"with role(\"epilogue\", warps={_warps(2, cfg.cw)}):")
    with s.indent():
        _consumer_mbar_body(s, cfg_state, m, "ab", epi_data, epi_rel)
    return s.text()


# --------------------------------------------------------------------------- UMMA classes


def render_pipeline_async_umma(cfg: Config, m: Optional[str]) -> str:
    """Softmax-like producer warps (every CTA) writing a stage for the MMA warp of the
    pair leader; the MMA warp releases with an elected tcgen05.commit."""
    s = Src()
    num_warps = cfg.pw + 1
    _header(s, "gen_pipeline_async_umma", cfg, 32 * num_warps, m)
    cm, cn = cfg.cluster
    _tma_layout(s, cfg)
    per_cta = 32 * cfg.pw if cfg.psig == "thread" else cfg.pw
    p = _count_mut(per_cta * cfg.v, m, "producer_count_plus", "producer_count_minus")
    c = _count_mut(1, m, "consumer_count_plus", "consumer_count_minus")
    s("pipe = PipelineAsyncUmma.create(")
    with s.indent():
        s(_stages_kw(m))
        s(f"producer_group={_group(p)},")
        s(f"consumer_group={_group(c)},")
        s("cta_layout_vmnk=cta_layout,")
        if cfg.defer_sync:
            s("defer_sync=True,")
    s(")")
    _init_sync(s, cfg, m)

    def pdata(s: Src, ref: str) -> None:
        s(f"write(pipe, {ref})")
        s("fence_proxy_async()")

    def cdata(s: Src, ref: str) -> None:
        s(f"tcgen05_mma(pipe, {ref})")

    def rel(s: Src, ref: str) -> None:
        s(_release_call(cfg, "pipe", ref))

    s(f"with role(\"softmax\", warps={_role_warps(0, cfg.pw, m, num_warps, True)}):")
    with s.indent():
        _producer_mbar_body(s, cfg, m, "pipe", pdata)
    ctas = ", ctas=[0]" if cfg.v == 2 else ""
    s(f"with role(\"mma\", warps=[{cfg.pw}]{ctas}):")
    with s.indent():
        _consumer_mbar_body(s, cfg, m, "pipe", cdata, rel)
    return s.text()


def render_pipeline_umma_async(cfg: Config, m: Optional[str]) -> str:
    """The accumulator pipeline: the MMA warp (pair leader) produces with tcgen05.commit,
    ``cw`` epilogue warps per CTA consume and release (per thread or elected)."""
    s = Src()
    num_warps = 1 + cfg.cw
    _header(s, "gen_pipeline_umma_async", cfg, 32 * num_warps, m)
    _tma_layout(s, cfg)
    per_cta = 32 * cfg.cw if cfg.csig == "thread" else cfg.cw
    c = _count_mut(per_cta * cfg.v, m, "consumer_count_plus", "consumer_count_minus")
    p = _count_mut(1, m, "producer_count_plus", "producer_count_minus")
    s("acc = PipelineUmmaAsync.create(")
    with s.indent():
        s(_stages_kw(m))
        s(f"producer_group={_group(p)},")
        s(f"consumer_group={_group(c)},")
        s("cta_layout_vmnk=cta_layout,")
        if cfg.defer_sync:
            s("defer_sync=True,")
    s(")")
    _init_sync(s, cfg, m)

    def pdata(s: Src, ref: str) -> None:
        pass

    def cdata(s: Src, ref: str) -> None:
        s(f"read(acc, {ref})")

    def rel(s: Src, ref: str) -> None:
        _elected(s, cfg.csig == "elect" and m != "no_elect_release",
                 _release_call(cfg, "acc", ref))

    ctas = ", ctas=[0]" if cfg.v == 2 else ""
    s(f"with role(\"mma\", warps={_role_warps(0, 1, m, num_warps, True)}{ctas}):")
    with s.indent():
        _producer_mbar_body(s, replace(cfg, psig="thread"), m, "acc", pdata)
    s(f"with role(\"epilogue\", warps={_warps(1, cfg.cw)}):")
    with s.indent():
        _consumer_mbar_body(s, cfg, m, "acc", cdata, rel)
    return s.text()


# --------------------------------------------------------------------------- CLC


def render_pipeline_clc(cfg: Config, m: Optional[str]) -> str:
    """The CLC tile scheduler: a sched warp in CTA 0 (producer, and a consumer of its own
    responses) and one worker warp per CTA, looping until the response is invalid."""
    s = Src()
    num_warps = 2
    _header(s, "gen_pipeline_clc", cfg, 64, m)
    cs = cfg.cluster_size
    _tma_layout(s, cfg)
    c = 32 * (1 + cs)
    c = _count_mut(c, m, "consumer_count_plus", "consumer_count_minus")
    p = _count_mut(1, m, "producer_count_plus", "producer_count_minus")
    tx = 16 + (16 if m == "tx_plus" else 0)
    s("clc = PipelineClcFetchAsync.create(")
    with s.indent():
        s(_stages_kw(m))
        s(f"producer_group={_group(p)},")
        s(f"consumer_group={_group(c)},")
        s(f"tx_count={tx},")
        s("cta_layout_vmnk=cta_layout,")
        if cfg.defer_sync:
            s("defer_sync=True,")
    s(")")
    _init_sync(s, cfg, m)
    sched_ctas = "" if m == "producer_in_every_cta" else ", ctas=[0]"
    s(f"with role(\"sched\", warps={_role_warps(0, 1, m, num_warps, True)}{sched_ctas}):")
    with s.indent():
        pu = "Consumer" if m == "wrong_phase_producer" else "ProducerConsumer"
        s(f"pstate = make_pipeline_state(PipelineUserType.{pu}, stages)")
        s("cstate = make_pipeline_state(PipelineUserType.Consumer, stages)")
        s("while True:")
        with s.indent():
            if m != "missing_acquire":
                s("clc.producer_acquire(pstate)")
            s("clc_query(clc, pstate)")
            s("pstate.advance()")
            s("clc.consumer_wait(cstate)")
            s("valid = clc_response_valid(clc, cstate)")
            s("clc.consumer_release(cstate)")
            s("cstate.advance()")
            s("if not valid:")
            with s.indent():
                s("break")
        if m != "no_tail":
            s("clc.producer_tail(pstate)")
    s("with role(\"worker\", warps=[1]):")
    with s.indent():
        cu = "Producer" if m == "wrong_phase_consumer" else "Consumer"
        s(f"state = make_pipeline_state(PipelineUserType.{cu}, stages)")
        s("while True:")
        with s.indent():
            if m != "missing_wait":
                s("clc.consumer_wait(state)")
            s("valid = clc_response_valid(clc, state)")
            if m != "missing_release":
                s("clc.consumer_release(state)")
            s("state.advance()")
            s("if not valid:")
            with s.indent():
                s("break")
    return s.text()


# --------------------------------------------------------------------------- TMA store


def render_pipeline_tma_store(cfg: Config, m: Optional[str]) -> str:
    """``cw`` epilogue warps write a smem stage, fence, sync on a named barrier; warp 0
    issues the TMA store and commits; ``producer_acquire`` (wait_group.read stages-1) by
    warp 0 and a named barrier protect the next write of the stage.  ``cls ==
    "TmaStoreFence"`` uses the sync object directly."""
    s = Src()
    num_warps = cfg.cw
    fence = cfg.cls == "TmaStoreFence"
    _header(s, "gen_tma_store", cfg, 32 * num_warps, m)
    if fence:
        s("store = PipelineTmaStore.create(num_stages=stages, "
          "producer_group=CooperativeGroup(Agent.Thread, 32))")
        s(f"sync = TmaStoreFence({0 if m == 'zero_stages' else 'stages'})")
    else:
        s("store = PipelineTmaStore.create(")
        with s.indent():
            s(_stages_kw(m))
            s(f"producer_group={_group(32 * cfg.cw)},")
        s(")")
    n = 32 * cfg.cw
    if m == "named_count_not_warp_multiple":
        n = 32 * cfg.cw - 16
    s(f"epi_bar = NamedBarrier(barrier_id={cfg.barrier_id}, num_threads={n})")
    s(f"with role(\"epilogue\", warps={_role_warps(0, cfg.cw, m, num_warps, True)}):")
    with s.indent():
        _loop_open(s, cfg)
        s("buf = (t * k_tiles + k) % stages")
        if m != "missing_acquire":
            s("if warp_idx() == 0:")
            with s.indent():
                s("sync.wait()" if fence else "store.producer_acquire()")
        if m != "missing_first_sync":
            s("epi_bar.arrive_and_wait()")
        s("write(store, buf)")
        if m != "missing_fence":
            s("fence_proxy_async()")
        if m != "missing_second_sync":
            s("epi_bar.arrive_and_wait()")
        s("if warp_idx() == 0:")
        with s.indent():
            s("tma_store(store, buf)")
            s("sync.arrive()" if fence else "store.producer_commit()")
        _loop_close(s)
        if m != "no_tail":
            s("if warp_idx() == 0:")
            with s.indent():
                s("sync.tail()" if fence else "store.producer_tail()")
    return s.text()


# --------------------------------------------------------------------------- PipelineOrder


def render_pipeline_order(cfg: Config, m: Optional[str]) -> str:
    """``length`` warps take turns (FlashAttention's ordering of warpgroups)."""
    s = Src()
    num_warps = cfg.length
    _header(s, "gen_pipeline_order", cfg, 32 * num_warps, m)
    count = _count_mut(32, m, "producer_count_plus", "producer_count_minus")
    depth = "0" if m == "zero_stages" else "stages"
    s("order = PipelineOrder.create(")
    with s.indent():
        s(f"depth={depth},")
        s(f"length={cfg.length},")
        s("group_id=warp_idx(),")
        s(f"producer_group={_group(count)},")
        if cfg.defer_sync:
            s("defer_sync=True,")
    s(")")
    _init_sync(s, cfg, m)
    s(f"with role(\"wg\", warps={_role_warps(0, cfg.length, m, num_warps, True)}):")
    with s.indent():
        _loop_open(s, cfg, constexpr=True)
        if m != "missing_wait":
            s("order.wait()")
        s("order.arrive()")
        if m == "double_arrive":
            s("order.arrive()")
        _loop_close(s)
    return s.text()


# --------------------------------------------------------------------------- NamedBarrier


def render_named_barrier(cfg: Config, m: Optional[str]) -> str:
    """A producer warp group and a consumer warp group hand off through two named
    barriers: ``full`` (producer arrive, consumer sync) and ``empty`` (consumer arrive,
    producer sync).  ``pw``/``cw`` warps per side."""
    s = Src()
    num_warps = cfg.pw + cfg.cw
    _header(s, "gen_named_barrier", cfg, 32 * num_warps, m)
    n = 32 * num_warps
    fid = cfg.barrier_id
    eid = fid + 1
    if m == "named_id_out_of_range":
        eid = 16
    full_n = n - 16 if m == "named_count_not_warp_multiple" else n
    s(f"full = NamedBarrier(barrier_id={fid}, num_threads={full_n})")
    s(f"empty = NamedBarrier(barrier_id={eid}, num_threads={n})")
    if m == "named_differing_counts":
        s(f"full_wrong = NamedBarrier(barrier_id={fid}, num_threads={n - 32})")
    s(f"with role(\"producer\", warps={_role_warps(0, cfg.pw, m, num_warps, True)}):")
    with s.indent():
        _loop_open(s, cfg)
        if m == "named_aligned_in_elect":
            s("with elect_one():")
            with s.indent():
                s("full.arrive()")
        else:
            s("full.arrive()")
        if m == "named_double_arrival":
            s("empty.arrive()")
        else:
            s("empty.arrive_and_wait()")
        _loop_close(s)
    s(f"with role(\"consumer\", warps={_warps(cfg.pw, cfg.cw)}):")
    with s.indent():
        _loop_open(s, cfg)
        if m == "named_differing_counts":
            s("full_wrong.arrive_and_wait()")
        else:
            s("full.arrive_and_wait()")
        s("empty.arrive()")
        _loop_close(s)
    return s.text()


# --------------------------------------------------------------------------- dispatch


RENDER: dict[str, Callable[[Config, Optional[str]], str]] = {
    "PipelineAsync": render_pipeline_async,
    "PipelineCpAsync": render_pipeline_async,
    "PipelineTmaAsync": render_pipeline_tma_async,
    "PipelineTmaUmma": render_pipeline_tma_umma,
    "PipelineAsyncUmma": render_pipeline_async_umma,
    "PipelineUmmaAsync": render_pipeline_umma_async,
    "PipelineClcFetchAsync": render_pipeline_clc,
    "PipelineTmaMultiConsumersAsync": render_pipeline_tma_multi_consumers,
    "PipelineTmaStore": render_pipeline_tma_store,
    "TmaStoreFence": render_pipeline_tma_store,
    "PipelineOrder": render_pipeline_order,
    "NamedBarrier": render_named_barrier,
}


def render(cfg: Config, mutation: Optional[str] = None) -> str:
    """The .pipe source of ``cfg``, with ``mutation`` applied (None: the correct one)."""
    return RENDER[cfg.cls](cfg, mutation)


def program(cfg: Config, mutation: Optional[str] = None) -> Program:
    if mutation is None:
        return Program(cfg, None, render(cfg), OK)
    table = dict(mutations(cfg))
    if mutation not in table:
        raise ValueError(f"mutation {mutation!r} does not apply to {cfg.describe()}")
    return Program(cfg, mutation, render(cfg, mutation), table[mutation])


# --------------------------------------------------------------------------- mutations


MBAR_CLASSES = ("PipelineAsync", "PipelineCpAsync", "PipelineTmaAsync", "PipelineTmaUmma",
                "PipelineAsyncUmma", "PipelineUmmaAsync", "PipelineTmaMultiConsumersAsync")
TMA_CLASSES = ("PipelineTmaAsync", "PipelineTmaUmma", "PipelineTmaMultiConsumersAsync")


def mutations(cfg: Config) -> list[tuple[str, Expected]]:
    """The single mutations that apply to ``cfg``, with the verdict each must give."""
    c = cfg.cls
    out: list[tuple[str, Expected]] = []
    add = lambda name, exp: out.append((name, exp))  # noqa: E731

    # ---- input errors (exit code 2)
    if c == "PipelineOrder":
        add("zero_stages", config_error("depth=0"))
    elif c != "NamedBarrier":
        add("zero_stages", config_error("num_stages=0"))
    add("bad_role_warp", config_error("names warp"))

    if c in MBAR_CLASSES:
        _mbar_mutations(cfg, add)
    elif c == "PipelineClcFetchAsync":
        _clc_mutations(cfg, add)
    elif c in ("PipelineTmaStore", "TmaStoreFence"):
        _store_mutations(cfg, add)
    elif c == "PipelineOrder":
        add("producer_count_plus", violated(DEADLOCK))
        add("producer_count_minus", violated(OVER_ARRIVAL))
        # a warp arriving twice per turn: a barrier of the next group gets a second
        # arrival (or the groups wait on each other's unused stages) once the arrivals
        # wrap around the depth
        if 2 * cfg.n_iters > cfg.stages:
            add("double_arrive", violated(OVER_ARRIVAL, DEADLOCK))
        # without waits nothing orders the groups; the model sees it once a warp arrives
        # on the same barrier again before its waiter observed the earlier phase
        if cfg.n_iters > cfg.stages:
            add("missing_wait", violated(OVER_ARRIVAL, DEADLOCK))
        if cfg.defer_sync:
            add("missing_init_sync", violated("use-before-init"))
    elif c == "NamedBarrier":
        add("named_id_out_of_range", violated("named-barrier-misuse"))
        add("named_count_not_warp_multiple", violated("named-barrier-misuse"))
        add("named_differing_counts", violated("named-barrier-misuse"))
        if cfg.n_iters >= 2:
            add("named_double_arrival", violated("named-barrier-misuse"))
        add("named_aligned_in_elect", violated("named-barrier-misuse"))
    return out


def _mbar_mutations(cfg: Config, add: Callable[[str, Expected], None]) -> None:
    c = cfg.cls
    # ---- group sizes (P1): one arrival too many expected -> the phase never completes;
    # one too few -> an extra arrival.
    add("consumer_count_plus", violated(DEADLOCK))
    add("producer_count_plus", violated(DEADLOCK))
    if not (c == "PipelineTmaMultiConsumersAsync"):
        cmin = _consumer_count(cfg)
        if cmin > 1:
            add("consumer_count_minus", violated(OVER_ARRIVAL))
        else:
            add("consumer_count_minus", config_error("CooperativeGroup size"))
    pcount = _producer_count(cfg)
    if pcount > 1:
        add("producer_count_minus", violated(OVER_ARRIVAL))
    else:
        add("producer_count_minus", config_error("CooperativeGroup size"))
    # ---- a missing release: the producer's tail (or next acquire) waits forever
    add("missing_release", violated(DEADLOCK))
    # ---- a missing commit (thread-signalled producers): the consumer waits forever
    if c in ("PipelineAsync", "PipelineCpAsync", "PipelineAsyncUmma", "PipelineUmmaAsync"):
        add("missing_commit", violated(DEADLOCK))
    # ---- a consumer that reads without waiting
    add("missing_wait", violated("read-before-full", EXIT_RACE, DEADLOCK, OVER_ARRIVAL))
    # ---- a producer that writes without acquiring
    if c in TMA_CLASSES:
        # no arrive.expect_tx: the bytes land on an unarmed barrier, the phase never
        # completes (tx goes negative and stays there).  In a multicast cluster an
        # unthrottled producer floods the state space; keep it to one iteration there.
        if cfg.cluster_size == 1 or cfg.n_iters == 1:
            add("missing_acquire", violated(DEADLOCK, OVER_ARRIVAL))
    elif cfg.n_iters > cfg.stages:
        add("missing_acquire", violated(OVER_ARRIVAL, DEADLOCK))
    # ---- wrong initial phase (lesson 1 / P8)
    if cfg.api == "state":
        add("wrong_phase_producer", violated(DEADLOCK, "stale-parity"))
        add("wrong_phase_consumer", violated("read-before-full", "stale-parity"))
        if cfg.tiles >= 2 and cfg.k_tiles % (2 * cfg.stages) != 0:
            add("per_tile_state", violated(PHASE_CONFUSION))
    if cfg.api == "index_phase" and cfg.tiles >= 2 and cfg.k_tiles % (2 * cfg.stages) != 0:
        add("parity_from_tile_counter", violated(PHASE_CONFUSION))
    # ---- init visibility
    if cfg.defer_sync:
        add("missing_init_sync", violated("use-before-init"))
    # ---- CTA exit (lesson 5): in a cluster a CTA may exit while its peers still signal
    # it; with a tcgen05.commit release even one CTA may exit before the commit fires
    if cfg.cluster_size > 1 or c in ("PipelineTmaUmma", "PipelineAsyncUmma",
                                     "PipelineTmaMultiConsumersAsync"):
        add("no_tail", violated(EXIT_RACE))
    # ---- elect_one where the signalling needs it
    if cfg.psig == "elect" and c in ("PipelineAsync", "PipelineCpAsync"):
        add("no_elect_commit", violated("arrival-overflow"))
    if cfg.csig == "elect" and c in ("PipelineAsync", "PipelineCpAsync", "PipelineUmmaAsync"):
        add("no_elect_release", violated("arrival-overflow"))
    # ---- TMA: bytes (P2, P4), masks, election
    if c in TMA_CLASSES:
        add("tx_plus", violated(DEADLOCK))
        add("tx_minus", violated(DEADLOCK))
        add("tx_too_large", config_error("2^20-1"))
        add("skip_load", violated(DEADLOCK))
        add("mask_outside_cluster", config_error("outside the cluster"))
        if cfg.api == "state" and not cfg.try_wait and not cfg.extra_tx:
            add("elect_around_acquire", violated("elect-misuse"))


def _consumer_count(cfg: Config) -> int:
    c = cfg.cls
    if c in ("PipelineAsync", "PipelineCpAsync"):
        return _async_counts(cfg)[1]
    if c == "PipelineTmaAsync":
        return (cfg.cluster[0] + cfg.cluster[1] - 1) * cfg.cw
    if c == "PipelineTmaUmma":
        return 1 if cfg.v == 2 else cfg.cluster[0] + cfg.cluster[1] - 1
    if c == "PipelineAsyncUmma":
        return 1
    if c == "PipelineUmmaAsync":
        return (32 * cfg.cw if cfg.csig == "thread" else cfg.cw) * cfg.v
    return 1


def _producer_count(cfg: Config) -> int:
    c = cfg.cls
    if c in ("PipelineAsync", "PipelineCpAsync"):
        return _async_counts(cfg)[0]
    if c == "PipelineAsyncUmma":
        return (32 * cfg.pw if cfg.psig == "thread" else cfg.pw) * cfg.v
    return 1


def _clc_mutations(cfg: Config, add: Callable[[str, Expected], None]) -> None:
    # the consumer group already counts every lane of the cluster's scheduler and worker
    # warps; one more arrival than the cluster has threads is an input error
    if 32 * (1 + cfg.cluster_size) + 1 > 64 * cfg.cluster_size:
        add("consumer_count_plus", config_error("does not fit"))
    else:
        add("consumer_count_plus", violated(DEADLOCK))
    add("consumer_count_minus", violated(OVER_ARRIVAL))
    add("producer_count_plus", violated(DEADLOCK))
    add("missing_release", violated(DEADLOCK))
    add("missing_wait", violated("read-before-full"))
    add("missing_acquire", violated(DEADLOCK, OVER_ARRIVAL, "tx-overflow"))
    add("wrong_phase_producer", violated(DEADLOCK))
    add("wrong_phase_consumer", violated("read-before-full", "stale-parity"))
    add("tx_plus", violated(DEADLOCK))
    if cfg.cluster_size > 1:
        # P3's cousin: the scheduler runs in every CTA: every full gets cluster_size arms
        # (CUTLASS's producer_acquire waits on the calling CTA's own empty barrier,
        # which never fills: a deadlock; the model waits on CTA 0's barrier, which is a
        # remote wait from another CTA -- either way the misuse is reported)
        add("producer_in_every_cta", violated(OVER_ARRIVAL, DEADLOCK, "role-misuse",
                                              "remote-wait"))
    if cfg.defer_sync:
        add("missing_init_sync", violated("use-before-init"))


def _store_mutations(cfg: Config, add: Callable[[str, Expected], None]) -> None:
    if cfg.n_iters > cfg.stages:
        add("missing_acquire", violated("overwrite-before-release"))
    add("missing_fence", violated("missing-proxy-fence"))
    if cfg.cw > 1:
        add("missing_second_sync", violated("read-before-full", "missing-proxy-fence"))
        if cfg.n_iters > cfg.stages:
            # warp 1 runs ahead into the next tile: it overwrites the stage the store
            # still reads, or starts writing before warp 0 issued the current store
            add("missing_first_sync", violated("overwrite-before-release",
                                               "read-before-full", "named-barrier-misuse"))
    add("no_tail", violated("dangling-arrive-at-exit"))
    add("named_count_not_warp_multiple", violated("named-barrier-misuse"))


# --------------------------------------------------------------------------- strategies


def _common(draw: Any, cls: str, max_iters: int = 8) -> dict[str, Any]:
    """stages in 1..3, k_tiles in 1..4, sometimes a persistent loop of two tiles, with
    at most ``max_iters`` pipeline iterations in all (state-space budget)."""
    stages = draw(st.integers(1, 3))
    k_tiles = draw(st.integers(1, min(4, max_iters)))
    tiles = draw(st.sampled_from([1, 1, 2])) if 2 * k_tiles <= max_iters else 1
    return dict(stages=stages, k_tiles=k_tiles, tiles=tiles)


def _small_cluster(draw: Any, d: dict, v: int = 1) -> None:
    """Clusters of two CTAs: keep the explicit state space small (stages x k_tiles)."""
    sk = [(1, 1), (1, 2), (2, 1)] + ([(2, 2)] if v == 2 else [])
    d["stages"], d["k_tiles"] = draw(st.sampled_from(sk))
    d["tiles"] = 1


@st.composite
def _cfg_async(draw: Any, cls: str) -> Config:
    d = _common(draw, cls)
    api = draw(st.sampled_from(["state", "participants", "index_phase"]))
    pw = draw(st.integers(1, 2))
    cw = draw(st.integers(1, 2))
    if pw + cw > 3:
        cw = 1
    psig = draw(st.sampled_from(["thread", "elect", "fa"])) if cls == "PipelineAsync" else "thread"
    csig = draw(st.sampled_from(["thread", "elect", "fa"]))
    if api == "index_phase" and psig == "elect":
        psig = "thread"
    return Config(cls, api=api, try_wait=draw(st.booleans()) and api != "index_phase",
                  defer_sync=draw(st.booleans()), pw=pw, cw=cw, psig=psig, csig=csig, **d)


@st.composite
def _cfg_tma_async(draw: Any) -> Config:
    d = _common(draw, "PipelineTmaAsync")
    cluster = draw(st.sampled_from([(1, 1), (1, 1), (2, 1), (1, 2)]))
    api = draw(st.sampled_from(["state", "participants", "index_phase"]))
    cw = draw(st.integers(1, 2))
    try_wait = draw(st.booleans()) and api != "index_phase"
    if cluster != (1, 1):
        cw = 1
        _small_cluster(draw, d)
        try_wait = False
    extra = draw(st.sampled_from([0, 0, 1024])) if api == "state" else 0
    return Config("PipelineTmaAsync", api=api, try_wait=try_wait,
                  defer_sync=draw(st.booleans()), cw=cw, cluster=cluster,
                  a_bytes=draw(st.sampled_from([1024, 2048, 4096])),
                  b_bytes=draw(st.sampled_from([2048, 4096])),
                  two_loads=draw(st.booleans()), extra_tx=extra, **d)


@st.composite
def _cfg_tma_umma(draw: Any) -> Config:
    d = _common(draw, "PipelineTmaUmma", max_iters=4)
    shape = draw(st.sampled_from([((1, 1), 1), ((2, 1), 2), ((2, 1), 1), ((1, 2), 1)]))
    cluster, v = shape
    try_wait = draw(st.booleans())
    if cluster != (1, 1):
        _small_cluster(draw, d, v)
        try_wait = try_wait and v == 2
    api = draw(st.sampled_from(["state", "participants"]))
    return Config("PipelineTmaUmma", api=api, try_wait=try_wait,
                  defer_sync=draw(st.booleans()), cluster=cluster, v=v,
                  a_bytes=draw(st.sampled_from([2048, 4096])),
                  b_bytes=draw(st.sampled_from([2048, 4096])),
                  two_loads=draw(st.booleans()), **d)


@st.composite
def _cfg_multi(draw: Any) -> Config:
    d = _common(draw, "PipelineTmaMultiConsumersAsync", max_iters=3)
    d["stages"] = min(d["stages"], 2)
    api = draw(st.sampled_from(["state", "participants"]))
    return Config("PipelineTmaMultiConsumersAsync", api=api, try_wait=draw(st.booleans()),
                  defer_sync=draw(st.booleans()), cw=1,
                  csig=draw(st.sampled_from(["thread", "elect"])),
                  a_bytes=draw(st.sampled_from([2048, 4096])),
                  b_bytes=draw(st.sampled_from([2048, 4096])), **d)


@st.composite
def _cfg_async_umma(draw: Any) -> Config:
    d = _common(draw, "PipelineAsyncUmma")
    v = draw(st.sampled_from([1, 1, 2]))
    if v == 2:
        _small_cluster(draw, d, v)
    api = draw(st.sampled_from(["state", "participants"]))
    return Config("PipelineAsyncUmma", api=api, try_wait=draw(st.booleans()),
                  defer_sync=draw(st.booleans()), pw=1, v=v,
                  cluster=(2, 1) if v == 2 else (1, 1), **d)


@st.composite
def _cfg_umma_async(draw: Any) -> Config:
    d = _common(draw, "PipelineUmmaAsync")
    v = draw(st.sampled_from([1, 1, 2]))
    cw = draw(st.integers(1, 2))
    if v == 2:
        cw = 1
        _small_cluster(draw, d, v)
    api = draw(st.sampled_from(["state", "participants"]))
    return Config("PipelineUmmaAsync", api=api, try_wait=draw(st.booleans()),
                  defer_sync=draw(st.booleans()), cw=cw, v=v,
                  csig=draw(st.sampled_from(["thread", "elect"])),
                  cluster=(2, 1) if v == 2 else (1, 1), **d)


@st.composite
def _cfg_clc(draw: Any) -> Config:
    cluster = draw(st.sampled_from([(1, 1), (2, 1)]))
    stages = draw(st.integers(1, 2)) if cluster == (1, 1) else 1
    return Config("PipelineClcFetchAsync", stages=stages, k_tiles=1,
                  tiles=1, defer_sync=draw(st.booleans()), cluster=cluster)


@st.composite
def _cfg_store(draw: Any, cls: str) -> Config:
    d = _common(draw, cls)
    return Config(cls, cw=draw(st.integers(1, 2)), barrier_id=draw(st.integers(1, 15)), **d)


@st.composite
def _cfg_order(draw: Any) -> Config:
    d = _common(draw, "PipelineOrder")
    return Config("PipelineOrder", length=draw(st.integers(2, 3)),
                  defer_sync=draw(st.booleans()), **d)


@st.composite
def _cfg_named(draw: Any) -> Config:
    d = _common(draw, "NamedBarrier")
    pw = draw(st.integers(1, 2))
    cw = draw(st.integers(1, 2))
    return Config("NamedBarrier", pw=pw, cw=cw, barrier_id=draw(st.integers(1, 14)), **d)


STRATEGIES: dict[str, Callable[[], Any]] = {
    "PipelineAsync": lambda: _cfg_async("PipelineAsync"),
    "PipelineCpAsync": lambda: _cfg_async("PipelineCpAsync"),
    "PipelineTmaAsync": _cfg_tma_async,
    "PipelineTmaUmma": _cfg_tma_umma,
    "PipelineAsyncUmma": _cfg_async_umma,
    "PipelineUmmaAsync": _cfg_umma_async,
    "PipelineClcFetchAsync": _cfg_clc,
    "PipelineTmaMultiConsumersAsync": _cfg_multi,
    "PipelineTmaStore": lambda: _cfg_store("PipelineTmaStore"),
    "TmaStoreFence": lambda: _cfg_store("TmaStoreFence"),
    "PipelineOrder": _cfg_order,
    "NamedBarrier": _cfg_named,
}


def configs(cls: Optional[str] = None) -> Any:
    """Strategy: a random valid Config (of class ``cls``, or of any class)."""
    if cls is not None:
        return STRATEGIES[cls]()
    return st.sampled_from(CLASSES).flatmap(lambda c: STRATEGIES[c]())


def programs(cls: Optional[str] = None) -> Any:
    """Strategy: a valid Program (expected SAFE/PROVEN)."""
    return configs(cls).map(lambda c: program(c))


@st.composite
def _mutant(draw: Any, cls: Optional[str], include_config_errors: bool) -> Program:
    cfg = draw(configs(cls))
    muts = [(n, e) for n, e in mutations(cfg)
            if include_config_errors or e.kind != "config_error"]
    name, exp = draw(st.sampled_from(muts))
    return Program(cfg, name, render(cfg, name), exp)


def mutants(cls: Optional[str] = None, include_config_errors: bool = True) -> Any:
    """Strategy: a Program with one random mutation applied, and its expected verdict."""
    return _mutant(cls, include_config_errors)


def mutate(cfg: Config) -> Any:
    """Strategy: one random mutation of the correct program of ``cfg``."""
    return st.sampled_from(mutations(cfg)).map(
        lambda ne: Program(cfg, ne[0], render(cfg, ne[0]), ne[1]))


# --------------------------------------------------------------------------- checking helpers


def build_system(source: str, params: Optional[dict[str, Any]] = None,
                 memory_model: str = "cutlass") -> Any:
    """Parse and compile ``source`` into a ``System`` (raises ConfigError/Unsupported)."""
    from pipeproof.model.compile import compile_kernel
    from pipeproof.model.lang.parser import parse
    from pipeproof.model.system import System

    return System(compile_kernel(parse(source, "<generated>"), params or {}), memory_model)


def check_program(source: str, reduce: bool = False, max_states: int = 200_000,
                  timeout: float = float("inf")) -> Any:  # bounded by states
    """Run the explicit engine on ``source``; returns the Verdict."""
    from pipeproof.checker.explicit import check_explicit

    return check_explicit(build_system(source), max_states=max_states, timeout=timeout,
                          reduce=reduce)


def outcome_matches(prog: Program, verdict: Any = None, error: Optional[Exception] = None) -> bool:
    """Does a verdict (or a ConfigError) match what ``prog`` expects?"""
    e = prog.expected
    if error is not None:
        if (prog.mutation or "").endswith("_count_plus") and "does not fit the launch" in str(error):
            return True  # more arrivals per phase than threads exist: rejected up front
        return e.kind == "config_error" and e.message in str(error)
    if e.kind == "ok":
        return verdict.status in ("SAFE", "PROVEN")
    if e.kind == "violated":
        return verdict.status == "VIOLATED" and verdict.prop in e.props
    return False


__all__ = [
    "Config", "Program", "Expected", "CLASSES", "configs", "programs", "mutants", "mutate",
    "mutations", "render", "program", "build_system", "check_program", "outcome_matches",
    "OK", "violated", "config_error", "DEADLOCK", "OVER_ARRIVAL", "PHASE_CONFUSION",
    "EXIT_RACE",
]
