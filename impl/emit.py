"""Lower a compiled kernel to PTX: another interpreter of the model's instructions.

The input is ``model.compile.CompiledKernel``: one ``AgentProgram`` per warp of every CTA
of one cluster, whose instructions (``model/program.py``) carry static operands.  The
emitter walks the same instruction lists the transition system executes
(``model/system.py``) and prints, for each, the PTX with the same synchronisation
effect; there is no second copy of the pipeline rules.  Role dispatch is a switch on
``(%cluster_ctarank, warp)``; loops are the compiler's ``Jump``/``Branch`` instructions.
Programs compiled with run-time kernel arguments (``impl/structured.py``: ``for k in
range(k_tiles)`` stays a loop) read them from extra ``.param .u32 p_a_NAME`` parameters
(``Manifest.args`` holds the value the model was compiled with), so the PTX does not
depend on the trip count; the copies of such a loop's body that differ only in stage index
and phase are emitted once, with the PipelineState in registers (``impl/fold.py``,
``plan_fold``), so it does not depend on the stage count either.

Execution model of an emitted warp (all 32 lanes follow the program's control flow):

* a *step* (every instruction the model executes with ``exec_agent``) runs in lane 0,
  followed by ``bar.warp.sync``: arrivals of ``n`` lanes become one arrive with count
  ``n`` (PTX ISA ``mbarrier.arrive`` count operand), so a step is atomic on the barrier
  as it is in the model.  Named and cluster barriers are executed by all lanes.
* **tracing**: lane 0 takes a per-cluster ticket (``atom.global.add``) *before* a signal
  (arrive, TMA issue, commit, barrier arrival, exit) and *after* a wait returns, and
  writes a 16-byte event (``impl/events.py``) at that index.
* **data**: ghost effects become real accesses: a generic ``write_begin`` stores
  ``POISON`` into the stage's stamp, ``write_end`` stores the fill tag, TMA/cp.async
  copies bring the tag from global memory, and every ``read`` loads each stamp and
  compares it with the tag the model expects (``impl/layout.py``).  A mismatch is a data
  error (flag in the event, counter in the control block).
* **watchdog**: every ``try_wait`` loop reads ``%globaltimer``; past ``timeout`` it sets the
  cluster's abort flag, records ``STUCK`` with its pc and leaves; a warp that has waited
  past ``grace`` while the abort flag is set does the same.  Warps that finish (or
  give up) go to a common exit; the last warp of each CTA lingers until every CTA of the
  cluster got there, so no remote operation ever targets an exited CTA's shared memory
  (the model reports such operations as ``remote-op-to-exited-cta``; the trace shows
  them, the GPU does not fault).
* **jitter**: before each step lane 0 may ``nanosleep`` a pseudo-random time
  (xorshift32 seeded per run, CTA and warp).
* **global memory and several clusters** (``gmem_flags``/``gmem_buffer``, or a kernel
  that reads ``cluster_idx()``/``block_idx()``/``num_clusters()``): the model checks
  every cluster of the grid as one system (``model/compile.py`` compiles each cluster's
  path with its own ``cluster_idx()``, resolved at compile time).  The emitted kernel
  runs *instances* of that grid side by side: cluster ``%clusterid`` (linearised with
  ``%nclusterid``) is cluster ``k = id mod clusters`` of instance ``id / clusters``, and
  dispatch is on ``(k * cluster_size + %cluster_ctarank, warp)`` -- so ``cluster_idx()``
  is ``%clusterid`` when one instance is launched, and ``block_idx()`` is ``%ctaid``.
  Every instance has its own trace, control block (its ticket counter in global
  memory, ``C_GTICKET``) and global-memory block (``%gm``: flags and region stamps,
  ``impl/layout.GmemLayout``, zeroed by the runner).  Flag operations run in lane 0
  like every step (CUTLASS's ``GenericBarrier``: thread 0 spins or adds, a CTA barrier
  around it): ``atom.{release,relaxed}.gpu.global.add`` (an ``add`` by ``n`` lanes is
  one atomic of ``n * value``, the model's step), ``st.{release,relaxed}.gpu.global``,
  spins of ``ld.{acquire,relaxed}.gpu.global`` under the same watchdog as mbarrier
  waits (a spin nobody satisfies ends as ``STUCK``: a deadlock, not a hang), and
  ``fence.acq_rel.gpu``.  Region data are weak ``st.global``/``ld.global`` of stamps,
  so a read the flags do not order can see a stale or poisoned stamp on the GPU.
* **emulated commits** (sm_90a): a ``tcgen05.commit`` fires after the warp's next step
  when that step cannot wait, following the loop's control flow to each possible next
  step (``plan_commit_deferrals``), so a commit landing after the warp's exit is seen.
* **streaming sources**: without checks, a structured loop's TMA loads advance through
  global memory one period (``src_bytes``) per turn, as the unrolled loads do
  (``streams``), so a bandwidth measurement does not read L2.

Targets: ``sm_90a`` (runs on Hopper; Blackwell-only operations are emulated with the
same synchronisation effect, see ``spec/hardware.md``) and ``sm_100a`` (the real
``tcgen05.commit``, ``clusterlaunchcontrol.try_cancel`` and ``cta_group::2`` copies;
assembled with ``ptxas`` only).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Optional

from ..model.compile import CompiledKernel
from ..model.pipeline_state import advance_rule
from ..model.errors import Unsupported
from ..model.system import ANY_FILL
from ..model.groups import WARP_SIZE
from ..model.scopes import acquire_scope, cluster_acquired
from ..model.pipelines.gmem import GMEM_BUFFER, GMEM_FLAGS
from ..model.program import (GMEM_CTA, PARITY_TAG, AgentProgram, Arrive, BarRef, Branch,
                             BufRef, GmemAtomic, GmemFence, GmemWait,
                             BulkCommit, BulkWaitRead, ClusterArrive, ClusterWait,
                             CompleteTx, CpAsync, CpAsyncArrive, CpAsyncCommit,
                             CpAsyncWaitGroup, DynExpr, ExpectTx, Exit,
                             Fail, FenceMbarInit, GhostEffect, Instr, Jump, MbarInit,
                             NamedBarrierOp, NamedWait, Nop, SetLocal, TmaLoad, TmaStore,
                             TryWait, UmmaCommit, Wait, WgmmaWait)
from . import events as E
from . import fold as F
from .emit_tmem import is_tmem, lower as lower_tmem
from ..model.wgmma import uses_wgmma, warpgroup
from .layout import (CLC_VALID_WORD, GEN_KEY, HEADER_BYTES, POISON, STAMP_BASE, STAMP_BYTES,
                     Layout,
                     compute_layout, delivery_key, is_split, stamp_of)

ARCHES = ("sm_90a", "sm_100a")
PTX_VERSION = "8.7"
#: ``mbarrier.try_wait`` suspend-time hint of the bare waits (CUTLASS's value)
SUSPEND_HINT_NS = 10_000_000
#: how long an emulated commit pending at a warp's exit waits for the CTA's other warps
#: to exit before it lands (``linger_for_exits``; conformance runs only)
EXIT_LINGER_NS = 50_000
#: shared-memory header: word 0 counts exited warps, word 1 is the ticket counter (CTA 0)
TICKET_OFF = 4
#: from this header byte on, one word per warp that issues wgmma: the wgmma-groups it has
#: committed (``wgmma_commit``/``wgmma_wait``)
WGMMA_OFF = 8

#: kernel parameters, in order (the runner builds its argument list from this)
PARAMS: tuple[tuple[str, str], ...] = (
    ("trace", "u64"), ("ctrl", "u64"), ("src", "u64"), ("dst", "u64"), ("timing", "u64"),
    ("work", "u64"), ("tmap", "u64"), ("src_stride", "u64"), ("dst_stride", "u64"),
    ("timeout", "u64"), ("grace", "u64"), ("seed", "u32"), ("jit_prob", "u32"),
    ("jit_mask", "u32"), ("cap", "u32"), ("num_tiles", "u32"),
)


@dataclass(frozen=True)
class EmitOptions:
    arch: str = "sm_90a"
    trace: bool = True        # record events (tickets)
    jitter: bool = True       # nanosleep jitter before each step
    compact: bool = False     # force compact buffers (stamps only; bytes to the sink)
    structured: bool = True   # emit_file: loops bounded by parameters stay loops
    #: watchdog on every wait and data stamps (stores by writers, checks by readers);
    #: off (with trace and jitter off): the bare synchronisation, for timing
    checks: bool = True
    #: how a warp's ``Arrive`` of ``n`` lanes is lowered: ``thread`` -- as CUTLASS does,
    #: each of ``n`` lanes arrives with count 1 (lane 0 takes the ticket first, the
    #: warp meets at ``bar.warp.sync``, then the lanes arrive), no pending count is
    #: observed; ``warp`` -- lane 0 arrives once with count ``n`` and the trace records
    #: the pending count ``mbarrier.arrive`` returned
    arrivals: str = "thread"
    #: structured loops keep PipelineState in registers, computed at run time as CUTLASS
    #: does: the copies of a body that differ only in stage index and phase are emitted
    #: once (``impl/fold.py``).  Off: the body copied once per pipeline state (faster by
    #: a few ns a k-tile on an H100, 6x the PTX; bench/results/cute_latency.md)
    fold: bool = True
    #: without checks, structured loops advance their TMA sources through fresh global
    #: memory every turn (``streams``: a bandwidth figure that does not read L2); off:
    #: every turn reads the first period's regions again, as a kernel that re-reads one
    #: L2-resident tile does (the hand-off latency benchmark and its CuTe DSL twin)
    stream: bool = True


@dataclass
class Manifest:
    """What the runner needs to launch an emitted kernel (JSON)."""

    entry: str
    arch: str
    block: int
    cluster: tuple[int, int, int]
    num_warps: int
    cluster_size: int
    smem: int
    src_bytes: int
    src_stamps: list[tuple[int, int, int]]
    dst_bytes: int
    cap: int
    cyclic: bool
    has_clc: bool
    trace: bool
    jitter: bool
    compact: bool
    params: list[tuple[str, str]] = field(default_factory=lambda: [list(p) for p in PARAMS])
    #: run-time kernel arguments (parameter ``a_NAME``) and the value the model's programs
    #: were compiled with; a launch with another value runs a kernel the model did not see
    args: dict[str, int] = field(default_factory=dict)
    #: how the programs were compiled (``impl/structured.py``)
    compiled: str = "unrolled"
    #: clusters of one instance (the grid the model checks as one system); a launch of
    #: ``G`` instances has ``G * grid_clusters`` clusters
    grid_clusters: int = 1
    #: bytes of an instance's global-memory block (flags, region stamps): parameter
    #: ``gmem``, ``gmem_stride`` apart, zeroed before every launch
    gmem_bytes: int = 0
    #: per looping warp: its loop folded with the PipelineState in registers, or why its
    #: copies were kept (``impl/fold.py``)
    folded: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


@dataclass
class Emitted:
    ptx: str
    manifest: Manifest
    layout: Layout
    #: how the programs were compiled (``impl/structured.Compiled.describe``)
    note: str = ""
    #: per warp program (``cta0.w1``): how its structured loop was emitted -- folded
    #: (PipelineState in registers, ``impl/fold.py``) or why it kept its copies
    folds: dict = field(default_factory=dict)


class _Regs:
    KINDS = {"r": ".b32", "rd": ".b64", "p": ".pred", "h": ".b16", "q": ".b128"}

    def __init__(self) -> None:
        self.n = {k: 0 for k in self.KINDS}

    def new(self, kind: str) -> str:
        i = self.n[kind]
        self.n[kind] += 1
        return f"%{kind}{i}"

    def decls(self) -> list[str]:
        return [f"\t.reg {t} %{k}<{max(self.n[k], 1)}>;" for k, t in self.KINDS.items()]


class _Emitter:
    def __init__(self, ck: CompiledKernel, opts: EmitOptions):
        if opts.arch not in ARCHES:
            raise ValueError(f"unknown arch {opts.arch!r}; expected one of {', '.join(ARCHES)}")
        self.ck = ck
        self.o = opts
        self.info = ck.info
        #: clusters of an instance, and whether the kernel has global memory
        self.nclus = max(1, self.info.clusters)
        self.gmem = any(d.cls in (GMEM_FLAGS, GMEM_BUFFER) for d in ck.pipelines)
        self.multi = self.nclus > 1
        if self.multi and self.info.cluster_size > 1:
            raise Unsupported("unsupported: several clusters of more than one CTA in the "
                              "PTX emitter (the model checks one CTA per cluster)")
        self.L = compute_layout(ck, opts.compact)
        self.R = _Regs()
        self.body: list[str] = []
        self.nlabel = 0
        self.csize = self.info.cluster_size
        self.nw = self.info.num_warps
        #: (cta, warp) of the warps that take part in their warpgroup's wgmma
        #: (``model/wgmma.py``): their commit counters live in the header
        self.wg_members = {(p.cta, p.warp) for p in ck.programs if uses_wgmma(p.code)}
        if self.wg_members and WGMMA_OFF + 4 * self.nw > HEADER_BYTES:
            raise Unsupported(f"unsupported: wgmma in a CTA of {self.nw} warps (the "
                              f"emitted kernel keeps one commit counter per warp in a "
                              f"{HEADER_BYTES}-byte header)")
        self.cluster = self.csize > 1
        self.sem_scope = "cluster" if self.cluster else "cta"
        #: barrier arrays whose waits acquire at cluster scope (``model/scopes.py``)
        self.acq_cluster = cluster_acquired(ck.programs)
        #: barrier arrays some warp arrives on in another CTA: CUTLASS's arrive on them
        #: takes the target CTA's rank at run time (``arrive_ranked``), local ones too
        self.remote_arrays = {a.bar.array for p in ck.programs for i in p.code
                              if isinstance(i, Arrive) for a in i.arrivals
                              if a.bar.cta != p.cta}
        self.b100 = opts.arch == "sm_100a"
        self.locals: dict[str, str] = {}
        self.prog: Optional[AgentProgram] = None
        self.stream = False  # this warp's loop advances its TMA sources (``streams``)
        #: the folded loop of the warp being emitted (``plan_fold``) and its registers
        self.fold: Optional[F.Fold] = None
        self.fold_it: Optional[str] = None
        self.fold_pcs: dict[int, str] = {}
        self.fold_cache: dict = {}
        self.folds: dict[str, str] = {}
        self.args = dict(ck.runtime_args)
        self.params = PARAMS + tuple((f"a_{n}", "u32") for n in sorted(self.args))
        if self.gmem:
            self.params += (("gmem", "u64"), ("gmem_stride", "u64"))

    # ------------------------------------------------------------------ plumbing

    def __call__(self, line: str) -> None:
        self.body.append("\t" + line)

    def label(self, name: str) -> None:
        self.body.append(f"{name}:")

    def fresh(self, stem: str) -> str:
        self.nlabel += 1
        return f"$_{stem}{self.nlabel}"

    def r(self) -> str:
        return self.R.new("r")

    def rd(self) -> str:
        return self.R.new("rd")

    def p(self) -> str:
        return self.R.new("p")

    def imm(self, v: int) -> str:
        x = self.r()
        self(f"mov.u32 {x}, {v & 0xFFFFFFFF};")
        return x

    # ------------------------------------------------------------------ addresses

    def smem_addr(self, off: Any) -> str:
        a = self.r()
        if isinstance(off, F.SymOff):  # a stage index in a register (``impl/fold.py``)
            self(f"mad.lo.u32 {a}, {off.reg}, {off.stride}, {off.base};")
            self(f"add.u32 {a}, {a}, %smem;")
            return a
        self(f"add.u32 {a}, %smem, {off};")
        return a

    def cluster_addr(self, off: int, cta: int) -> tuple[str, bool]:
        """A shared::cluster address of offset ``off`` in CTA ``cta`` (remote?)."""
        a = self.smem_addr(off)
        if cta == self.prog.cta:  # type: ignore[union-attr]
            return a, False
        m = self.r()
        self(f"mapa.shared::cluster.u32 {m}, {a}, {cta};")
        return m, True

    def bar_off(self, ref: BarRef) -> Any:
        try:
            if isinstance(ref.stage, F.StageReg):  # base + index * 8 (``impl/fold.py``)
                base = self.L.bar_offset[(ref.array, 0)]
                step = self.L.bar_offset[(ref.array, 1)] - base \
                    if (ref.array, 1) in self.L.bar_offset else 0
                return F.SymOff(base, step, ref.stage.reg)
            return self.L.bar_offset[(ref.array, ref.stage)]
        except KeyError:
            raise Unsupported(f"unsupported: barrier {ref} has no storage") from None

    def bar_exists(self, ref: BarRef) -> bool:
        stage = 0 if isinstance(ref.stage, F.StageReg) else ref.stage
        return (ref.array, stage) in self.L.bar_offset and 0 <= ref.cta < self.csize

    def slot_off(self, buf: BufRef, key: tuple) -> int:
        return self.L.buffers[buf.buffer].slot_addr(buf.stage, key)

    # ------------------------------------------------------------------ tracing

    def ticket(self) -> str:
        """A per-cluster ticket: a counter in CTA 0's shared memory (``atom`` at cluster
        scope); much cheaper than a global atomic and as ordered."""
        t = self.r()
        if self.o.trace:
            if self.multi:  # several clusters: the instance's counter in global memory
                self(f"atom.relaxed.gpu.global.add.u32 {t}, [%ctrl+{4 * E.C_GTICKET}], 1;")
            else:
                space = "shared::cluster" if self.cluster else "shared::cta"
                self(f"atom.{space}.add.u32 {t}, [%tka], 1;")
            x = self.r()
            self(f"add.u32 {x}, {t}, 1;")
            self(f"max.u32 %tmax, %tmax, {x};")
        return t

    def record(self, kind: int, pc: int, t: str, obs0: str = "0", obs1: str = "0") -> None:
        if not self.o.trace:
            return
        prog = self.prog
        assert prog is not None
        hdr = E.VALID | kind << 24 | prog.cta << 8 | prog.warp
        ok = self.p()
        self(f"setp.lt.u32 {ok}, {t}, %cap;")
        off, addr = self.rd(), self.rd()
        self(f"mul.wide.u32 {off}, {t}, {E.EVENT_BYTES};")
        self(f"add.u64 {addr}, %ev, {off};")
        regs = []
        for v in (hdr, self.pcv(pc), obs0, obs1):
            if isinstance(v, str) and v.startswith("%"):
                regs.append(v)
            else:
                regs.append(self.imm(int(v)))
        self(f"@{ok} st.global.v4.u32 [{addr}], {{{', '.join(regs)}}};")
        self(f"@!{ok} red.global.add.u32 [%ctrl+{4 * E.C_OVERFLOW}], 1;")

    # ------------------------------------------------------------------ ghost effects

    def ghost(self, effects: tuple[GhostEffect, ...], st: "_Step", generic_writes: bool) -> None:
        fenced = False
        for e in effects:
            if not self.o.checks and e.kind != "clean":
                continue  # stamps are instrumentation; the proxy fence is synchronisation
            if e.kind == "read":
                self.read_check(e, st)
            elif e.kind in ("write_begin", "write_end") and generic_writes:
                val = POISON if e.kind == "write_begin" else self.stamp_val(e.tag)
                self.store_stamp(e.buf, GEN_KEY, val)
            elif e.kind == "clean" and not fenced and e.buf.cta != GMEM_CTA:
                self("fence.proxy.async.shared::cta;")
                fenced = True

    def gmem_addr(self, off: int) -> str:
        """The generic address of byte ``off`` of the instance's global-memory block."""
        a = self.rd()
        self(f"add.u64 {a}, %gm, {off};")
        return a

    def stamp_val(self, tag: Any) -> Any:
        """``stamp_of(tag)``; a register for a tag held in one (``impl/fold.py``)."""
        if not isinstance(tag, F.TagReg):
            return stamp_of(tag)
        v = self.r()
        if tag.parity:
            self(f"add.u32 {v}, {tag.reg}, {PARITY_TAG};")
            self(f"or.b32 {v}, {v}, {STAMP_BASE};")
        else:
            self(f"or.b32 {v}, {tag.reg}, {STAMP_BASE};")
        return v

    def store_stamp(self, buf: BufRef, key: tuple, val: Any) -> None:
        if buf.cta == GMEM_CTA:
            # a weak store: only the flags' release/acquire orders it for another CTA
            # (PTX ISA "Memory Consistency Model": data races on weak accesses)
            a = self.gmem_addr(self.L.gmem.buf_addr(buf))
            v, z = (val if isinstance(val, str) else self.imm(val)), self.imm(0)
            self(f"st.global.v4.u32 [{a}], {{{v}, {z}, {z}, {z}}};")
            return
        bl = self.L.buffers.get(buf.buffer)
        if bl is None or key not in bl.slots:
            return
        a, remote = self.cluster_addr(self.slot_off(buf, key), buf.cta)
        v = val if isinstance(val, str) else self.imm(val)
        z = self.imm(0)
        space = "shared::cluster" if remote else "shared::cta"
        self(f"st.{space}.v4.u32 [{a}], {{{v}, {z}, {z}, {z}}};")

    def read_check(self, e: GhostEffect, st: "_Step") -> None:
        if e.buf.cta == GMEM_CTA:  # a weak load of the global region's stamp
            a = self.gmem_addr(self.L.gmem.buf_addr(e.buf))
            v = self.r()
            self(f"ld.global.u32 {v}, [{a}];")
            self.stamp_error(v, e.tag, st)
            return
        bl = self.L.buffers.get(e.buf.buffer)
        if bl is None:
            return
        for s in bl.slots_for(e.buf.cta):
            if e.tag != ANY_FILL and s.region_only():
                continue  # an aliased region's own stores (``Slot.region_only``)
            a, remote = self.cluster_addr(bl.slot_addr(e.buf.stage, s.key), s.home(e.buf.cta))
            v = self.r()
            self(f"ld.{'shared::cluster' if remote else 'shared::cta'}.u32 {v}, [{a}];")
            self.stamp_error(v, e.tag, st)

    def stamp_error(self, v: str, tag: int, st: "_Step") -> None:
        """Count a data error when stamp register ``v`` does not hold fill ``tag``."""
        bad = self.stamp_bad(v, tag)
        ok = self.fresh("rdok")
        self(f"@!{bad} bra {ok};")
        self(f"or.b32 {st.flags}, {st.flags}, {E.F_DATA};")
        lo = self.r()
        self(f"shl.b32 {lo}, {v}, 16;")
        self(f"or.b32 {st.flags}, {st.flags}, {lo};")
        self(f"red.global.add.u32 [%ctrl+{4 * E.C_ERRORS}], 1;")
        who = self.imm(self.prog.cta << 16 | self.prog.warp)  # type: ignore[union-attr]
        self(f"st.relaxed.gpu.global.u32 [%ctrl+{4 * E.C_ERR_WHO}], {who};")
        self(f"st.relaxed.gpu.global.u32 [%ctrl+{4 * E.C_ERR_PC}], {self.pcv(st.pc)};")
        self(f"st.relaxed.gpu.global.u32 [%ctrl+{4 * E.C_ERR_STAMP}], {v};")
        self.label(ok)

    def stamp_bad(self, v: str, tag: int) -> str:
        """Predicate: stamp register ``v`` does not hold fill ``tag`` (model ``read`` rule)."""
        hi, lo = self.r(), self.r()
        self(f"and.b32 {hi}, {v}, 0xFF000000;")
        self(f"and.b32 {lo}, {v}, 255;")
        bad = self.p()
        self(f"setp.ne.u32 {bad}, {hi}, {STAMP_BASE};")
        if isinstance(tag, F.TagReg):  # the tag in a register (``impl/fold.py``)
            tpar = self.r()
            self(f"and.b32 {tpar}, {tag.reg}, 1;")
            return self.stamp_tag_bad(lo, bad, tag.reg, tpar, tag.parity)
        if tag == ANY_FILL:  # any complete fill
            return bad
        return self.stamp_tag_bad(lo, bad, str(tag), str(tag % 2), tag >= PARITY_TAG)

    def stamp_tag_bad(self, lo: str, bad: str, tag: str, tag_parity: str,
                      parity_only: bool) -> str:
        """``bad`` or-ed with: the stamp's fill number ``lo`` is not fill ``tag`` (an
        immediate or a register); a parity tag, or a stamp that is itself a parity tag,
        compares the parities only."""
        par, pbad = self.r(), self.p()
        self(f"and.b32 {par}, {lo}, 1;")
        self(f"setp.ne.u32 {pbad}, {par}, {tag_parity};")
        if parity_only:
            self(f"or.pred {bad}, {bad}, {pbad};")
            return bad
        isp, ebad = self.p(), self.p()
        self(f"setp.ge.u32 {isp}, {lo}, {PARITY_TAG};")
        self(f"setp.ne.u32 {ebad}, {lo}, {tag};")
        self(f"@{isp} mov.pred {ebad}, {pbad};")
        self(f"or.pred {bad}, {bad}, {ebad};")
        return bad

    # ------------------------------------------------------------------ kernel

    def emit(self) -> Emitted:
        ck, info = self.ck, self.info
        name = f"pipeproof_{info.name}"
        for prog in ck.programs:
            self.program(prog)
        head = self.prologue()
        tail = self.epilogue()
        params = ",\n".join(f"\t.param .{t} p_{n}" for n, t in self.params)
        shown = {k: ("<kernel argument>" if k in self.args else v) for k, v in info.params}
        lines = [
            "//", f"// pipeproof: kernel {info.name} ({ck.source_file or '<source>'}), "
            f"params {shown}",
            f"// target {self.o.arch}; trace={self.o.trace} jitter={self.o.jitter} "
            f"compact={self.L.compact}", "//",
            f".version {PTX_VERSION}", f".target {self.o.arch}", ".address_size 64", "",
            ".extern .shared .align 1024 .b8 pp_smem[];", "",
            f".visible .entry {name}(", params, ")",
            f".reqntid {info.block_threads}, 1, 1", "{",
        ]
        lines += self.R.decls()
        lines += head + self.body + tail + ["}", ""]
        cyclic = any(isinstance(i, Jump) and i.target <= pc
                     for p in ck.programs for pc, i in enumerate(p.code))
        nsteps = sum(1 for p in ck.programs for i in p.code if i.is_sync) + \
            sum(1 for p in ck.programs for i in p.code if isinstance(i, UmmaCommit))
        cap = 1 << 16 if cyclic else max(256, 2 * nsteps + 64)
        man = Manifest(
            entry=name, arch=self.o.arch, block=info.block_threads,
            cluster=info.cluster_shape, num_warps=self.nw, cluster_size=self.csize,
            smem=self.L.smem_bytes, src_bytes=self.L.src_bytes * (
                self.src_periods() if any(self.streams(p) for p in ck.programs) else 1),
            src_stamps=self.L.src_stamps(), dst_bytes=self.L.dst_bytes, cap=cap,
            cyclic=cyclic, has_clc=any(isinstance(i, TmaLoad) and i.kind == "clc"
                                       for p in ck.programs for i in p.code),
            trace=self.o.trace, jitter=self.o.jitter, compact=self.L.compact,
            params=[list(p) for p in self.params], args=dict(self.args),
            compiled="structured" if self.args else "unrolled", grid_clusters=self.nclus,
            gmem_bytes=self.L.gmem.size, folded=dict(self.folds))
        return Emitted("\n".join(lines), man, self.L, folds=dict(self.folds))

    def prologue(self) -> list[str]:
        saved, self.body = self.body, []
        for n, t in self.params:
            self.body.append(f"\t.reg .{'b64' if t == 'u64' else 'b32'} %{n};")
        for n in ("k_tid", "k_warp", "k_lane", "k_lead", "k_rank", "k_clus", "smem", "rng",
                  "stuck", "key", "tka", "tmax"):
            self.body.append(f"\t.reg .b32 %{n};")
        for n in ("k_inst", "k_cin"):
            self.body.append(f"\t.reg .b32 %{n};")
        for n in ("ev", "t0", "srcoff") + (("gm",) if self.gmem else ()):
            self.body.append(f"\t.reg .b64 %{n};")
        self.body.append("\t.reg .pred %pl0;")
        self.body.append("\t.reg .pred %pel;")
        for n, t in self.params:
            self(f"ld.param.{t} %{n}, [p_{n}];")
        self("mov.u32 %k_tid, %tid.x;")
        self("shr.u32 %k_warp, %k_tid, 5;")
        self("and.b32 %k_lane, %k_tid, 31;")
        # the warp's leader, the lane that issues every single-lane step: the lane
        # ``elect.sync`` elects from the full warp (the PTX ISA's elect.sync: the same
        # leader for the same membermask every time), so the per-step guards
        # (``lead_guard``) select this same lane
        self("elect.sync %k_lead|%pl0, -1;")
        self("mov.u32 %k_rank, %cluster_ctarank;")
        cx, cy, cz, nx, ny = self.r(), self.r(), self.r(), self.r(), self.r()
        self(f"mov.u32 {cx}, %clusterid.x;")
        self(f"mov.u32 {cy}, %clusterid.y;")
        self(f"mov.u32 {cz}, %clusterid.z;")
        self(f"mov.u32 {nx}, %nclusterid.x;")
        self(f"mov.u32 {ny}, %nclusterid.y;")
        t = self.r()
        self(f"mad.lo.u32 {t}, {cz}, {ny}, {cy};")
        self(f"mad.lo.u32 %k_clus, {t}, {nx}, {cx};")
        # the instance (a grid of ``nclus`` clusters the model checks as one system) and
        # the cluster's index in it: the model's ``cluster_idx()``
        if self.multi:
            self(f"div.u32 %k_inst, %k_clus, {self.nclus};")
            self(f"rem.u32 %k_cin, %k_clus, {self.nclus};")
        else:
            self("mov.u32 %k_inst, %k_clus;")
            self("mov.u32 %k_cin, 0;")
        self("mov.u32 %smem, pp_smem;")
        self("mov.u32 %stuck, 0;")
        self("mov.u32 %tmax, 0;")
        if self.cluster:
            tk = self.smem_addr(TICKET_OFF)
            self(f"mapa.shared::cluster.u32 %tka, {tk}, 0;")
        else:
            self(f"add.u32 %tka, %smem, {TICKET_OFF};")
        c64, off = self.rd(), self.rd()
        self(f"cvt.u64.u32 {c64}, %k_inst;")
        # per-instance bases (an instance is one cluster unless the kernel spans a grid)
        capb = self.rd()
        self(f"cvt.u64.u32 {capb}, %cap;")
        self(f"mul.lo.u64 {off}, {c64}, {capb};")
        self(f"shl.b64 {off}, {off}, 4;")
        self(f"add.u64 %ev, %trace, {off};")
        o2 = self.rd()
        self(f"mul.lo.u64 {o2}, {c64}, {4 * E.CTRL_WORDS};")
        self(f"add.u64 %ctrl, %ctrl, {o2};")
        o3 = self.rd()
        self(f"mul.lo.u64 {o3}, {c64}, %src_stride;")
        self(f"add.u64 %src, %src, {o3};")
        o4 = self.rd()
        self(f"mul.lo.u64 {o4}, {c64}, %dst_stride;")
        self(f"add.u64 %dst, %dst, {o4};")
        if self.gmem:
            o6 = self.rd()
            self(f"mul.lo.u64 {o6}, {c64}, %gmem_stride;")
            self(f"add.u64 %gm, %gmem, {o6};")
        slot = self.r()
        self(f"mad.lo.u32 {slot}, %k_clus, {self.csize}, %k_rank;")
        self(f"mad.lo.u32 {slot}, {slot}, {self.nw}, %k_warp;")
        o5 = self.rd()
        self(f"mul.wide.u32 {o5}, {slot}, 16;")
        self(f"add.u64 %timing, %timing, {o5};")
        # rng: seed ^ hash(slot); never zero
        h = self.r()
        self(f"mul.lo.u32 {h}, {slot}, 0x9E3779B9;")
        self(f"xor.b32 %rng, %seed, {h};")
        self("or.b32 %rng, %rng, 1;")
        # poison every stamp, zero the header; lane 0 of warp 0
        p0 = self.p()
        skip = self.fresh("nopoison")
        self(f"setp.ne.u32 {p0}, %k_tid, 0;")
        self(f"@{p0} bra {skip};")
        z = self.imm(0)
        self(f"st.shared.v2.u32 [%smem], {{{z}, {z}}};")
        for w in sorted({w for _, w in self.wg_members}):  # no wgmma-group committed yet
            self(f"st.shared.u32 [%smem+{self.wg_counter(w)}], {z};")
        if self.o.checks:  # data stamps are instrumentation
            pz = self.imm(POISON)
            for bl in self.L.buffers.values():
                if self.args and self.o.fold and bl.stages > 1:  # a loop over the stages
                    def poison(i: str, bl: Any = bl) -> None:
                        for s in bl.slots.values():
                            a = self.smem_addr(bl.slot_addr(F.StageReg(i), s.key))
                            self(f"st.shared.v4.u32 [{a}], {{{pz}, {pz}, {pz}, {pz}}};")
                    self.stage_loop(bl.stages, poison)
                    continue
                for stg in range(bl.stages):
                    for s in bl.slots.values():
                        a = self.smem_addr(bl.slot_addr(stg, s.key))
                        self(f"st.shared.v4.u32 [{a}], {{{pz}, {pz}, {pz}, {pz}}};")
            self("fence.proxy.async.shared::cta;")
        self.label(skip)
        self("bar.sync 0;")
        if self.cluster:
            # CTA 0's ticket counter must be zero before any CTA takes a ticket
            self("barrier.cluster.arrive.relaxed.aligned;")
            self("barrier.cluster.wait.aligned;")
        # dispatch on (the CTA's index in the instance, warp): program ``cta`` of the model
        # is CTA ``cta mod cluster_size`` of cluster ``cta / cluster_size``
        cta = self.r()
        self(f"mad.lo.u32 {cta}, %k_cin, {self.csize}, %k_rank;")
        self(f"mad.lo.u32 %key, {cta}, {self.nw}, %k_warp;")
        for k, prog in enumerate(self.ck.programs):
            pk = self.p()
            self(f"setp.eq.u32 {pk}, %key, {prog.cta * self.nw + prog.warp};")
            self(f"@{pk} bra $P{k};")
        self("bra $EXIT;")
        out, self.body = self.body, saved
        return out

    def epilogue(self) -> list[str]:
        saved, self.body = self.body, []
        self.label("$STUCK_EXIT")
        self(f"@%pl0 red.global.add.u32 [%ctrl+{4 * E.C_STUCK}], 1;")
        self.label("$EXIT")
        self("bar.warp.sync -1;")
        self("@!%pl0 bra $EXIT2;")
        if self.o.trace:
            self(f"red.global.max.u32 [%ctrl+{4 * E.C_TICKET}], %tmax;")
        now = self.rd()
        self(f"mov.u64 {now}, %globaltimer;")
        self(f"st.global.u64 [%timing+8], {now};")
        old, pl = self.r(), self.p()
        self(f"atom.shared.add.u32 {old}, [%smem], 1;")
        self(f"setp.ne.u32 {pl}, {old}, {self.nw - 1};")
        self(f"@{pl} bra $EXIT2;")
        if self.cluster:
            self(f"red.release.gpu.global.add.u32 [%ctrl+{4 * E.C_EXITED}], 1;")
            t0, c, el, lim, pd = self.rd(), self.r(), self.rd(), self.rd(), self.p()
            self(f"mov.u64 {t0}, %globaltimer;")
            self(f"shl.b64 {lim}, %timeout, 2;")
            self.label("$LINGER")
            self(f"ld.acquire.gpu.global.u32 {c}, [%ctrl+{4 * E.C_EXITED}];")
            self(f"setp.ge.u32 {pd}, {c}, {self.csize};")
            self(f"@{pd} bra $EXIT2;")
            self(f"mov.u64 {now}, %globaltimer;")
            self(f"sub.u64 {el}, {now}, {t0};")
            self(f"setp.gt.u64 {pd}, {el}, {lim};")
            self(f"@{pd} bra $EXIT2;")
            self("nanosleep.u32 64;")
            self("bra $LINGER;")
        self.label("$EXIT2")
        self("bar.warp.sync -1;")
        self("exit;")
        out, self.body = self.body, saved
        return out

    # ------------------------------------------------------------------ programs

    def program(self, prog: AgentProgram) -> None:
        self.prog = prog
        k = self.ck.programs.index(prog)
        self.k = k
        self.label(f"$P{k}")
        self.body.append(f"\t// ---- cta {prog.cta} warp {prog.warp} role {prog.role or 'idle'}")
        now = self.rd()
        self(f"mov.u64 {now}, %globaltimer;")
        self(f"@%pl0 st.global.u64 [%timing], {now};")
        self.targets = set()
        for ins in prog.code:
            if isinstance(ins, Jump):
                self.targets.add(ins.target)
            elif isinstance(ins, Branch):
                self.targets.update((ins.then, ins.orelse))
        #: pc -> emulated commits that fire after that step / before it (when a flag is
        #: given: only if that commit is still pending, see ``plan_commit_deferrals``)
        self.defer_at: dict[int, list] = {}
        self.fire_before: dict[int, list] = {}
        self.pending: dict[int, str] = {}
        self.locals = {}
        for name in prog.locals:
            reg = self.r()
            self.locals[name] = reg
            self(f"mov.u32 {reg}, 0;")
        if not self.b100:
            self.plan_commit_deferrals(prog)
        self.stream = self.streams(prog)
        if self.stream:
            self("mov.u64 %srcoff, 0;")
        fold = self.plan_fold(prog)
        starts = set()
        if fold is not None:
            starts = {fold.body.pcs[0]} | ({fold.exit.pcs[0]} if fold.exit else set())
        in_run: set[int] = set()
        for pc, ins in enumerate(prog.code):
            if fold is not None and (pc in fold.skip or pc in in_run):
                continue  # another copy of the folded loop, or of a run's element
            self.label(self.pc_label(pc))
            if fold is not None and pc == fold.head:
                self.fold_init(fold)
            if pc in starts:
                self.fold_cache = {}  # derived states are computed per path
            self.body.append(f"\t// [{pc}] {type(ins).__name__}: {_clean(ins.label)}")
            if fold is not None and pc in fold.runs:
                in_run.update(range(pc + 1, pc + fold.runs[pc][0]))
                self.fold_run(fold, pc, ins)
                continue
            if fold is not None and pc in fold.slots:
                ins = self.fold_instr(fold, pc, ins)
            self.instr(pc, ins)
            if fold is not None and pc == fold.body_end:
                self.fold_advance(fold)
        self.fold, self.fold_it, self.fold_pcs = None, None, {}

    # ------------------------------------------------------------------ folded loops

    def plan_fold(self, prog: AgentProgram) -> Optional["F.Fold"]:
        """Fold the copies of ``prog``'s structured loop into one body with the pipeline
        state in registers (``impl/fold.py``), or say why not (``Emitted.folds``)."""
        self.fold, self.fold_it, self.fold_pcs, self.fold_cache = None, None, {}, {}
        if not self.args or not self.o.fold:
            return None
        fold, why = F.plan(prog, self.L, self.o.checks, self.o.trace, self.stream,
                           commits_deferred=not self.b100)
        if fold is not None:
            inside = set(fold.skip) | set(fold.slots) | {fold.head}
            if inside & (set(self.defer_at) | set(self.fire_before)):
                fold, why = None, ("an emulated tcgen05.commit before the loop lands inside "
                                   "it (its deferral names one copy)")
        if fold is not None:
            self.folds[prog.name] = fold.describe()
        elif why:
            self.folds[prog.name] = f"copies kept: {why}"
        self.fold = fold
        return fold

    def fold_init(self, fold: "F.Fold") -> None:
        """Before the folded loop's test: the state registers of every class (index, and
        phase 0 of the class) and the copy counter; the back edge jumps past this."""
        self.fold_regs = []
        for nst, start, phase in fold.classes:
            idx, ph = self.r(), self.r()
            self(f"mov.u32 {idx}, {start};")
            self(f"mov.u32 {ph}, {phase};")
            self.fold_regs.append((idx, ph))
        if fold.counter:
            self.fold_it = self.r()
            self(f"mov.u32 {self.fold_it}, 0;")
        self.fold_top = self.fresh("fold")
        self.label(self.fold_top)

    def fold_state(self, fold: "F.Fold", cls: int, shift: int) -> tuple[str, str]:
        """Registers of ``advance^shift`` of class ``cls``'s state: the model's rule
        (``model.pipeline_state.advance_rule``) lowered to PTX, from the nearest state
        already computed on this path."""
        if shift == 0:
            return self.fold_regs[cls]
        if (cls, shift) in self.fold_cache:
            return self.fold_cache[(cls, shift)]
        have = max([m for (c, m) in self.fold_cache if c == cls and m < shift], default=0)
        cur = self.fold_regs[cls] if have == 0 else self.fold_cache[(cls, have)]
        V = _PtxValues(self)
        for m in range(have + 1, shift + 1):
            i, g = advance_rule(V, _PtxVal(cur[0], self), _PtxVal(cur[1], self),
                                fold.classes[cls][0], fold.phases)
            cur = (str(i), str(g))
            self.fold_cache[(cls, m)] = cur
        return cur

    def fold_run(self, fold: "F.Fold", pc: int, ins: Instr) -> None:
        """A run of the continuation (``Fold.runs``: ``producer_tail``'s wait on every
        stage) as a PTX loop: the state of its first element in registers, the element,
        the model's advance, ``length`` times; element ``r`` is pc ``pc + r``."""
        n, cls, base = fold.runs[pc]
        first = self.fold_state(fold, cls, base)
        idx, ph, ctr, more = self.r(), self.r(), self.r(), self.p()
        self(f"mov.u32 {idx}, {first[0]};")
        self(f"mov.u32 {ph}, {first[1]};")
        self(f"mov.u32 {ctr}, 0;")
        top = self.fresh("run")
        self.label(top)
        saved, cache = self.fold_regs[cls], self.fold_cache
        self.fold_regs[cls], self.fold_cache = (idx, ph), {}
        slots = tuple(replace(e, shift=e.shift - base) if isinstance(e, F.Explain) else e
                      for e in fold.slots[pc])
        self.instr(pc, self.fold_instr(fold, pc, ins, slots, ctr))
        self.fold_pcs = {}
        i, g = advance_rule(_PtxValues(self), _PtxVal(idx, self), _PtxVal(ph, self),
                            fold.classes[cls][0], fold.phases)
        self(f"mov.u32 {idx}, {i};")
        self(f"mov.u32 {ph}, {g};")
        self(f"add.u32 {ctr}, {ctr}, 1;")
        self(f"setp.lt.u32 {more}, {ctr}, {n};")
        self(f"@{more} bra {top};")
        self.fold_regs[cls], self.fold_cache = saved, cache

    def fold_instr(self, fold: "F.Fold", pc: int, ins: Instr, slots: Optional[tuple] = None,
                   element: Optional[str] = None) -> Instr:
        """The template instruction at ``pc`` with its state operands in registers, and
        (traced or checked) the register holding the pc of the copy that runs (plus
        ``element``, a run's element counter)."""
        vals = []
        for ex in (fold.slots[pc] if slots is None else slots):
            if not isinstance(ex, F.Explain):
                vals.append(ex.value)
                continue
            idx, ph = self.fold_state(fold, ex.cls, ex.shift)
            if ex.kind == "stage":
                vals.append(F.StageReg(idx) if fold.classes[ex.cls][0] > 1 else 0)
                continue
            bits = 2 if ex.kind == "parity" or ex.parity_tag else fold.phases
            if ex.offset == 0 and bits == fold.phases:
                vals.append(ph if ex.kind == "parity" else F.TagReg(ph, ex.parity_tag))
                continue
            v = self.r()
            self(f"add.u32 {v}, {ph}, {ex.offset};")
            self(f"and.b32 {v}, {v}, {bits - 1};")
            vals.append(v if ex.kind == "parity" else F.TagReg(v, ex.parity_tag))
        if fold.counter and (self.o.trace or self.o.checks):
            region = fold.body if pc in fold.body.pcs else fold.exit
            v = self.r()
            self(f"mad.lo.s32 {v}, {self.fold_it}, {region.stride}, {pc};")  # type: ignore
            if element is not None:
                self(f"add.s32 {v}, {v}, {element};")
            self.fold_pcs = {pc: v}
        return F.instantiate(ins, vals, F.emitted_effects(self.o.checks))

    def fold_advance(self, fold: "F.Fold") -> None:
        """End of the folded body: every class state advances once (the model's rule,
        as ``PipelineState.advance``), the copy counter steps and wraps where the model's
        program jumps back (there a streaming loop moves to fresh source memory), and
        control returns to the loop test."""
        self.fold_pcs = {}
        V = _PtxValues(self)
        for (nst, _, _), (idx, ph) in zip(fold.classes, self.fold_regs):
            i, g = advance_rule(V, _PtxVal(idx, self), _PtxVal(ph, self), nst, fold.phases)
            self(f"mov.u32 {idx}, {i};")
            self(f"mov.u32 {ph}, {g};")
        if fold.counter:
            it, pw = self.fold_it, self.p()
            self(f"add.u32 {it}, {it}, 1;")
            self(f"setp.eq.u32 {pw}, {it}, {fold.copies};")
            if self.stream:
                stay = self.fresh("nowrap")
                self(f"@!{pw} bra {stay};")
                self(f"mov.u32 {it}, {fold.wrap_to};")
                self.advance_source()
                self.label(stay)
            else:
                self(f"@{pw} mov.u32 {it}, {fold.wrap_to};")
        self(f"bra {self.fold_top};")

    def stage_step(self, array: str, stages: int) -> Optional[int]:
        """Structured emission: the distance between the stages of barrier array
        ``array`` when they are evenly laid out and a loop over them pays (else None)."""
        if not (self.args and self.o.fold) or stages < 2:
            return None
        offs = [self.L.bar_offset.get((array, s)) for s in range(stages)]
        if None in offs:
            return None
        step = offs[1] - offs[0]
        return step if all(o == offs[0] + s * step for s, o in enumerate(offs)) else None

    def stage_loop(self, stages: int, body: Any) -> None:
        """``body(i)`` in a PTX loop over ``i`` in ``0 .. stages - 1`` (a register), so
        the code does not grow with the stage count."""
        i, pr = self.r(), self.p()
        top = self.fresh("stg")
        self(f"mov.u32 {i}, 0;")
        self.label(top)
        body(i)
        self(f"add.u32 {i}, {i}, 1;")
        self(f"setp.lt.u32 {pr}, {i}, {stages};")
        self(f"@{pr} bra {top};")

    def fold_region(self, pc: int) -> Optional[tuple[int, int]]:
        """(first copy's offset, per-copy distance) of a folded pc's global region."""
        if self.fold is None or self.fold_it is None:
            return None
        return self.fold.regions.get(pc)

    def pcv(self, pc: Any) -> Any:
        """The pc a trace record or error names: a register in a folded body."""
        return self.fold_pcs.get(pc, pc) if isinstance(pc, int) else pc

    def pc_label(self, pc: int) -> str:
        return f"$L{self.k}_{pc}"

    def instr(self, pc: int, ins: Instr) -> None:
        if isinstance(ins, Jump):
            if self.stream and ins.target <= pc:
                self.advance_source()
            self(f"bra {self.pc_label(ins.target)};")
            return
        if isinstance(ins, Branch):
            c = self.dyn(ins.cond)
            pr = self.p()
            self(f"setp.ne.u32 {pr}, {c}, 0;")
            self(f"@{pr} bra {self.pc_label(ins.then)};")
            self(f"bra {self.pc_label(ins.orelse)};")
            return
        if isinstance(ins, SetLocal):
            if ins.value.op == "response":
                self.response(pc, ins)
            else:
                v = self.dyn(ins.value)
                self(f"mov.u32 {self.locals[ins.dest]}, {v};")
            return
        if pc in self.fire_before:
            # commits still pending from a predecessor fire before this step can wait
            skip = self.fresh("fb")
            self.lead_guard(skip)
            for cpc, cins, flag in self.fire_before.pop(pc):
                self.fire_pending(cpc, cins, flag)
            self.label(skip)
            self("bar.warp.sync -1;")
        self.step(pc, ins)
        self.wgmma_commit(ins)
        if isinstance(ins, Exit):
            self("bra $EXIT;")

    # ------------------------------------------------------------------ dynamic values

    def dyn(self, e: DynExpr) -> str:
        op, a = e.op, e.args
        if op == "local":
            return self.locals[a[0]]
        if op == "const":
            return self.imm(int(a[0]))
        if op == "arg":  # a run-time kernel argument (structured emission)
            return f"%a_{a[0]}"
        vals = [self.dyn(x) for x in a]
        out = self.r()
        if op in ("not", "truth"):
            pr = self.p()
            self(f"setp.{'eq' if op == 'not' else 'ne'}.s32 {pr}, {vals[0]}, 0;")
            self(f"selp.u32 {out}, 1, 0, {pr};")
        elif op in ("and", "or"):
            acc = self.p()
            self(f"setp.ne.s32 {acc}, {vals[0]}, 0;")
            for v in vals[1:]:
                q = self.p()
                self(f"setp.ne.s32 {q}, {v}, 0;")
                self(f"{op}.pred {acc}, {acc}, {q};")
            self(f"selp.u32 {out}, 1, 0, {acc};")
        elif op in ("eq", "ne", "lt", "le"):
            pr = self.p()
            self(f"setp.{op}.s32 {pr}, {vals[0]}, {vals[1]};")
            self(f"selp.u32 {out}, 1, 0, {pr};")
        elif op in ("add", "sub", "min", "max"):
            # signed, as the model's ``eval_dyn`` compares (``min``: a run-time trip count
            # such as ``min(k_pipe_mmas, k_tiles)`` under structured emission)
            self(f"{op}.s32 {out}, {vals[0]}, {vals[1]};")
        else:
            raise Unsupported(f"unsupported: run-time operator {op} in emitted code")
        return out

    def response(self, pc: int, ins: SetLocal) -> None:
        """Read an (emulated) CLC response into a local (all lanes read shared memory)."""
        buf: BufRef = ins.value.args[0]
        bl = self.L.buffers.get(buf.buffer)
        slots = bl.slots_for(buf.cta) if bl else []
        dest = self.locals[ins.dest]
        if not slots:
            self(f"mov.u32 {dest}, 0;")
            return
        own = [x for x in slots if x.key != GEN_KEY] or slots  # the CLC response's slot
        off = bl.slot_addr(buf.stage, own[0].key)  # type: ignore[union-attr]
        a, remote = self.cluster_addr(off, own[0].home(buf.cta))
        if self.b100:
            q, pr = self.R.new("q"), self.p()
            self(f"ld.{'shared::cluster' if remote else 'shared'}.b128 {q}, [{a}];")
            self(f"clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 {pr}, {q};")
            self(f"selp.u32 {dest}, 1, 0, {pr};")
        else:
            self(f"ld.{'shared::cluster' if remote else 'shared'}.u32 {dest}, "
                 f"[{a}+{4 * CLC_VALID_WORD}];")
        # the ghost read of the response (tag ANY_FILL): count a data error, no event
        st = _Step(self, pc)
        skip = self.fresh("rsp")
        self.lead_guard(skip)
        self.ghost(ins.pre, st, False)
        self.label(skip)
        self("bar.warp.sync -1;")

    # ------------------------------------------------------------------ steps

    def jitter(self) -> None:
        if not self.o.jitter:
            return
        t, ns, pr = self.r(), self.r(), self.p()
        for sh, op in ((13, "shl"), (17, "shr"), (5, "shl")):
            self(f"{op}.b32 {t}, %rng, {sh};")
            self("xor.b32 %rng, %rng, " + t + ";")
        self(f"and.b32 {t}, %rng, 255;")
        self(f"setp.lt.u32 {pr}, {t}, %jit_prob;")
        self(f"shr.b32 {ns}, %rng, 8;")
        self(f"and.b32 {ns}, {ns}, %jit_mask;")
        self(f"@{pr} nanosleep.u32 {ns};")

    def step(self, pc: int, ins: Instr) -> None:
        st = _Step(self, pc)
        t = type(ins)
        if is_tmem(ins):  # tcgen05.alloc/dealloc/relinquish_alloc_permit (.sync.aligned)
            lower_tmem(self, pc, ins, st)
            return
        if t is NamedBarrierOp:
            self.named(pc, ins, st)
            return
        if t is ClusterArrive:
            self.lane0_begin(st)
            self.ghost(ins.pre, st, True)
            tk = self.ticket()
            self.ghost(ins.post, st, True)
            self.record(E.K_STEP, pc, tk, "0", st.flags)
            self.lane0_end(st)
            self(f"barrier.cluster.arrive{'.relaxed' if ins.relaxed else ''}.aligned;")
            return
        if t is ClusterWait:
            self("barrier.cluster.wait.aligned;")
            self.lane0_begin(st)
            self.ghost(ins.pre, st, True)
            tk = self.ticket()
            self.ghost(ins.post, st, True)
            self.record(E.K_STEP, pc, tk, "0", st.flags)
            self.lane0_end(st)
            return
        if t is NamedWait:
            # the bar.sync itself was executed with the NamedBarrierOp before it
            self.lane0_begin(st)
            tk = self.ticket()
            self.ghost(ins.post, st, True)
            self.record(E.K_STEP, pc, tk, "0", st.flags)
            self.lane0_end(st)
            return
        lean = not (self.o.trace or self.o.jitter or self.o.checks) and pc not in self.defer_at
        if lean and t is Wait and ins.bar.cta == self.prog.cta and self.bar_exists(ins.bar):
            # no instrumentation: every lane waits, as every CUTLASS thread does
            self.ghost(ins.pre, st, True)
            self.wait_like(pc, ins, st)
            self.ghost(ins.post, st, True)
            return
        if lean and t is Arrive and self.thread_arrivals(ins):
            self.ghost(ins.pre, st, True)
            self.arrive_threads(ins)
            return
        if t is Arrive and self.thread_arrivals(ins):
            self.lane0_begin(st)
            self.ghost(ins.pre, st, True)
            tk = self.ticket()
            self.record(E.K_STEP, pc, tk, "0", st.flags)
            for cpc, cins, flag in self.defer_at.pop(pc, []):
                self.fire_pending(cpc, cins, flag)
            self.lane0_end(st)
            self.arrive_threads(ins)
            return
        self.lane0_begin(st, elect=t in _ELECTED)
        generic = t not in (TmaLoad, CpAsync)
        if t in (Wait, TryWait, BulkWaitRead, CpAsyncWaitGroup, GmemWait, WgmmaWait):
            self.ghost(ins.pre, st, generic)
            self.wait_like(pc, ins, st)
            if t is not TryWait:
                tk = self.ticket()
            else:
                tk = st.ticket
            self.ghost(ins.post, st, generic)
            self.record(E.K_STEP, pc, tk, st.obs0, st.flags)
        else:
            self.ghost(ins.pre, st, generic)
            tk = self.ticket()
            self.signal(pc, ins, st)
            self.ghost(ins.post, st, generic)
            self.record(E.K_STEP, pc, tk, st.obs0, st.flags)
            fires = self.defer_at.pop(pc, [])
            if fires and t is Exit and self.o.checks:
                self.linger_for_exits(fires)
            for cpc, cins, flag in fires:
                self.fire_pending(cpc, cins, flag)
            if t is UmmaCommit and not self.b100:
                self.umma_defer(pc, ins)
        self.lane0_end(st)
        if t is TryWait:
            dest = self.locals[ins.dest]
            self(f"shfl.sync.idx.b32 {dest}, {dest}, %k_lead, 31, -1;")

    def lead_guard(self, skip: str, elect: bool = False) -> None:
        """Only the warp's leader runs on to ``skip``.  ``elect``: by ``elect.sync`` (the
        warp is converged here: every step ends in ``bar.warp.sync``), as CUTLASS's
        ``elect_one`` issues bulk-async operations: ptxas then knows one thread runs the
        block and issues a bulk copy from uniform registers once, where after a lane test
        it wraps the copy in a loop over the active lanes (measured on an H100: the TMA
        hand-off 69 -> 49 ns a k-tile, bench/results/cute_latency.md)."""
        if elect:
            self("elect.sync _|%pel, -1;")
            self(f"@!%pel bra {skip};")
        else:
            self(f"@!%pl0 bra {skip};")

    def lane0_begin(self, st: "_Step", elect: bool = False) -> None:
        st.skip = self.fresh("s")
        self.lead_guard(st.skip, elect)
        self.jitter()

    def lane0_end(self, st: "_Step") -> None:
        self.label(st.skip)
        self("bar.warp.sync -1;")
        if st.can_stick:
            s, pr = self.r(), self.p()
            self(f"shfl.sync.idx.b32 {s}, %stuck, %k_lead, 31, -1;")
            self(f"setp.ne.u32 {pr}, {s}, 0;")
            self(f"@{pr} bra $STUCK_EXIT;")

    # ---- waits

    def wg_counter(self, warp: int) -> int:
        """Header byte of warp ``warp``'s count of committed wgmma-groups."""
        return WGMMA_OFF + 4 * warp

    def wg_siblings(self) -> list[int]:
        """The other warps of this warp's warpgroup that take part in its wgmma."""
        prog = self.prog
        assert prog is not None
        return sorted(w for c, w in self.wg_members if c == prog.cta and w != prog.warp
                      and warpgroup(w) == warpgroup(prog.warp))

    def wgmma_commit(self, ins: Instr) -> None:
        """``wgmma.commit_group`` (a ``wgmma_commit`` effect of the step): the warp's count
        of committed wgmma-groups goes up, published with ``st.release.cta`` for its
        warpgroup's waits (``wgmma_wait``).  After the step's ticket, so a wait that sees
        the count is recorded after the commit, as the model orders them.  The emitted
        kernel issues no MMA: the counters are the emulated wgmma-groups."""
        n = sum(1 for e in ins.pre + ins.post if e.kind == "wgmma_commit")
        if not n:
            return
        prog = self.prog
        assert prog is not None
        v = self.r()
        own = f"[%smem+{self.wg_counter(prog.warp)}]"
        self(f"@%pl0 ld.shared.u32 {v}, {own};")  # only lane 0 ever writes it
        self(f"@%pl0 add.u32 {v}, {v}, {n};")
        self(f"@%pl0 st.release.cta.shared.u32 {own}, {v};")
        self("bar.warp.sync -1;")

    def wgmma_wait(self, pc: int, ins: WgmmaWait, st: "_Step") -> None:
        """``wgmma.wait_group.sync.aligned n`` as the model means it (``model/wgmma.py``,
        PTX ISA 9.7.15.7.3): the wait is over once every wgmma-group of the warpgroup but
        the ``n`` most recent this warp committed is complete, which needs every member
        of the warpgroup to have committed it.  The emitted kernel issues no MMA (a group
        completes as soon as all its shares are committed), so lane 0 spins with
        ``ld.acquire.cta.shared`` until each sibling's commit count is at least its own
        less ``n`` -- the model's ``WgmmaState.wait_enabled`` in absolute counts (a
        retirement lowers every member's count alike).  No real ``wgmma.wait_group``:
        it is ``.aligned`` over the warpgroup, whose warps run different programs here."""
        sibs = self.wg_siblings()
        prog = self.prog
        assert prog is not None
        if (prog.cta, prog.warp) not in self.wg_members or not sibs:
            return  # alone in its warpgroup: its own groups are complete at once
        own, target = self.r(), self.r()
        self(f"ld.shared.u32 {own}, [%smem+{self.wg_counter(prog.warp)}];")
        self(f"sub.s32 {target}, {own}, {ins.n};")
        v = self.r()

        def attempt(pd: str) -> None:
            for i, w in enumerate(sibs):
                q = pd if i == 0 else self.p()
                self(f"ld.acquire.cta.shared.u32 {v}, [%smem+{self.wg_counter(w)}];")
                self(f"setp.ge.s32 {q}, {v}, {target};")
                if i:
                    self(f"and.pred {pd}, {pd}, {q};")

        self.spin(pc, st, attempt, "wg")

    def wait_like(self, pc: int, ins: Instr, st: "_Step") -> None:
        if isinstance(ins, GmemWait):
            self.gmem_spin(pc, ins, st)
            return
        if isinstance(ins, BulkWaitRead):
            self(f"cp.async.bulk.wait_group.read {ins.n};")
            return
        if isinstance(ins, CpAsyncWaitGroup):
            # lane 0 issued the warp's copies (``signal``), so its groups are the warp's
            self(f"cp.async.wait_group {ins.n};")
            return
        if isinstance(ins, WgmmaWait):
            self.wgmma_wait(pc, ins, st)
            return
        bar = ins.bar
        if bar.cta != self.prog.cta or not self.bar_exists(bar):  # type: ignore[union-attr]
            # remote wait: the model reports it; nothing to wait on here
            if isinstance(ins, TryWait):
                st.ticket = self.ticket()
            return
        a = self.smem_addr(self.bar_off(bar))
        # CUTLASS's ``.acquire.cta`` unless the model lets a remote ``.release.cluster``
        # arrive publish through this barrier (``model/scopes.py``)
        sem = f".acquire.{acquire_scope(bar, self.acq_cluster)}"
        if isinstance(ins, TryWait):
            pr = self.p()
            op = "test_wait" if ins.test else "try_wait"
            self(f"mbarrier.{op}.parity{sem}.shared::cta.b64 {pr}, [{a}], {ins.parity};")
            st.ticket = self.ticket()
            dest = self.locals[ins.dest]
            self(f"selp.u32 {dest}, 1, 0, {pr};")
            st.obs0 = dest
            self(f"or.b32 {st.flags}, {st.flags}, {E.F_RESULT};")
            return
        if not self.o.checks:  # the bare wait loop (no watchdog)
            # with CUTLASS's suspend-time hint (ClusterBarrier::wait: 0x989680 ns), which
            # the CuTe DSL emits too; it bounds how long one try may suspend the thread
            top, pd = self.fresh("w"), self.p()
            self.label(top)
            self(f"mbarrier.try_wait.parity{sem}.shared::cta.b64 {pd}, [{a}], {ins.parity}, "
                 f"{SUSPEND_HINT_NS};")
            self(f"@!{pd} bra {top};")
            return
        st.obs0 = self.watched(
            pc, st, lambda pd: self(f"mbarrier.try_wait.parity{sem}.shared::cta.b64 {pd}, "
                                    f"[{a}], {ins.parity};"))

    def spin(self, pc: int, st: "_Step", attempt: Any, tag: str) -> bool:
        """Repeat ``attempt`` until its predicate holds: a bare loop without checks
        (False), else under the watchdog (``watched``, True)."""
        if not self.o.checks:
            top, pd = self.fresh(tag), self.p()
            self.label(top)
            attempt(pd)
            self(f"@!{pd} bra {top};")
            return False
        self.watched(pc, st, attempt)
        return True

    def watched(self, pc: int, st: "_Step", attempt: Any) -> str:
        """A wait loop under the watchdog: ``attempt(pd)`` emits one try that sets
        predicate ``pd`` when the wait is over.  Past ``%timeout`` the warp sets the
        instance's abort flag, records ``STUCK`` and leaves; past ``%grace`` with the
        abort flag set it does the same.  Returns the register counting failed tries."""
        st.can_stick = True
        t0, now, el = self.rd(), self.rd(), self.rd()
        spins, ab = self.r(), self.r()
        pd, px = self.p(), self.p()
        top, done, tmo, abt = (self.fresh(x) for x in ("w", "wd", "wt", "wa"))
        self(f"mov.u64 {t0}, %globaltimer;")
        self(f"mov.u32 {spins}, 0;")
        self.label(top)
        attempt(pd)
        self(f"@{pd} bra {done};")
        self(f"add.u32 {spins}, {spins}, 1;")
        self(f"mov.u64 {now}, %globaltimer;")
        self(f"sub.u64 {el}, {now}, {t0};")
        self(f"setp.gt.u64 {px}, {el}, %timeout;")
        self(f"@{px} bra {tmo};")
        self(f"setp.lt.u64 {px}, {el}, %grace;")
        self(f"@{px} bra {top};")
        self(f"ld.relaxed.gpu.global.u32 {ab}, [%ctrl+{4 * E.C_ABORT}];")
        self(f"setp.ne.u32 {px}, {ab}, 0;")
        self(f"@{px} bra {abt};")
        self(f"bra {top};")
        for lbl, flag in ((tmo, 0), (abt, E.F_ABORT)):
            self.label(lbl)
            if flag == 0:
                one = self.imm(1)
                self(f"st.relaxed.gpu.global.u32 [%ctrl+{4 * E.C_ABORT}], {one};")
            self("mov.u32 %stuck, 1;")
            tk = self.ticket()
            self.record(E.K_STUCK, pc, tk, spins, str(flag))
            self(f"bra {st.skip};")
        self.label(done)
        return spins

    # ---- global memory (PTX ISA "Memory Consistency Model"; spec/primitives.md 13)

    def flag_addr(self, ins: Any) -> str:
        try:
            off = self.L.gmem.flags[ins.flag]
        except KeyError:
            raise Unsupported(f"unsupported: flag {ins.flag} has no storage") from None
        return self.gmem_addr(off)

    def gmem_spin(self, pc: int, ins: GmemWait, st: "_Step") -> None:
        """``wait_eq``/``wait_ge``: lane 0 spins with ``ld.acquire.gpu.global`` (or
        ``ld.relaxed.gpu``) until the flag satisfies the predicate, as CUTLASS's
        ``GenericBarrier::wait_eq``/``wait_lt`` and ``Semaphore::wait`` do with thread
        0.  PTX ISA "Memory Consistency Model" (acquire patterns: the load that reads
        a release's value, or a later value of its release sequence, synchronizes with
        it) and "ld" (``.acquire``/``.relaxed``, ``.gpu`` scope).  Under the watchdog
        (``watched``): a spin on a value nobody writes ends as ``STUCK``, which the
        replay judges as a deadlock.  The event records the value that ended the spin
        (``F_FLAG``)."""
        a = self.flag_addr(ins)
        v = self.r()
        cmp = "eq" if ins.cmp == "eq" else "ge"
        val = ins.value & 0xFFFFFFFF

        def attempt(pd: str) -> None:
            self(f"ld.{ins.sem}.gpu.global.u32 {v}, [{a}];")
            self(f"setp.{cmp}.s32 {pd}, {v}, {val};")

        if not self.spin(pc, st, attempt, "g"):
            return
        st.obs0 = v
        self(f"or.b32 {st.flags}, {st.flags}, {E.F_FLAG};")

    def gmem_update(self, ins: GmemAtomic, st: "_Step") -> None:
        """``arrive_inc``: ``atom.{release,relaxed}.gpu.global.add`` of ``lanes * value``
        by lane 0 (the model's step: ``n`` lanes' ``red`` of ``value`` each, one atomic
        here; ``atom`` rather than ``red`` so the trace records the value before the
        add, ``F_FLAG``); ``store``: ``st.{release,relaxed}.gpu.global.b32``.  PTX ISA
        "atom", "red", "st" (``.release``: a release pattern at ``.gpu`` scope; every
        later atomic add continues its release sequence), "Memory Consistency Model".
        CUTLASS ``cutlass/barrier.h`` ``GenericBarrier::arrive_inc``,
        ``cutlass/semaphore.h`` ``Semaphore::release``."""
        a = self.flag_addr(ins)
        if ins.op == "add":
            old = self.r()
            n = (ins.value * ins.lanes) & 0xFFFFFFFF
            self(f"atom.{ins.sem}.gpu.global.add.u32 {old}, [{a}], {n};")
            st.obs0 = old
            self(f"or.b32 {st.flags}, {st.flags}, {E.F_FLAG};")
        else:
            v = self.imm(ins.value)
            self(f"st.{ins.sem}.gpu.global.b32 [{a}], {v};")

    # ---- signals

    def signal(self, pc: int, ins: Instr, st: "_Step") -> None:
        t = type(ins)
        if t is Arrive:
            self.arrive(ins, st)
        elif t is ExpectTx:
            if self.bar_exists(ins.bar):
                a, remote = self.cluster_addr(self.bar_off(ins.bar), ins.bar.cta)
                sc = "cluster" if remote else "cta"
                self._tx_op("expect_tx", a, sc, ins.tx)
        elif t is CompleteTx:
            if self.bar_exists(ins.bar):
                a, remote = self.cluster_addr(self.bar_off(ins.bar), ins.bar.cta)
                sc = "cluster" if remote else "cta"
                self._tx_op("complete_tx", a, sc, ins.tx)
        elif t is TmaLoad:
            if ins.kind == "clc":
                self.clc(pc, ins, st)
            else:
                self.tma(pc, ins)
        elif t is CpAsync:
            if ins.buf.cta != self.prog.cta:  # type: ignore[union-attr]
                raise Unsupported("unsupported: cp.async into another CTA's shared memory")
            bl = self.L.buffers[ins.buf.buffer]
            dst = self.smem_addr(bl.slot_addr(ins.buf.stage, ("cpasync",)))
            src = self.src_addr(pc)
            self(f"cp.async.ca.shared.global [{dst}], [{src}], 16;")
        elif t is CpAsyncArrive:
            if self.bar_exists(ins.bar) and ins.bar.cta == self.prog.cta:  # type: ignore
                a = self.smem_addr(self.bar_off(ins.bar))
                for _ in range(ins.count):
                    self(f"cp.async.mbarrier.arrive{'.noinc' if ins.noinc else ''}"
                         f".shared::cta.b64 [{a}];")
        elif t is UmmaCommit:
            if self.b100:
                self.ghost(ins.effects, st, True)
                self.tcgen05_commit(ins)
        elif t is TmaStore:
            bl = self.L.buffers.get(ins.buf.buffer)
            slots = bl.slots_for(ins.buf.cta) if bl else []
            if slots and ins.buf.cta == self.prog.cta:  # type: ignore[union-attr]
                srcs = self.smem_addr(bl.slot_addr(ins.buf.stage, slots[0].key))
                d = self.rd()
                per = self.fold_region(pc)
                if per is not None:  # a folded copy's region (``src_addr``)
                    self(f"mad.wide.s32 {d}, {self.fold_it}, {per[1]}, {per[0]};")
                    self(f"add.u64 {d}, {d}, %dst;")
                else:
                    off = self.L.dst[(self.prog.cta, self.prog.warp, pc)]  # type: ignore
                    self(f"add.u64 {d}, %dst, {off};")
                self(f"cp.async.bulk.global.shared::cta.bulk_group [{d}], [{srcs}], "
                     f"{STAMP_BYTES};")
        elif t is BulkCommit:
            self("cp.async.bulk.commit_group;")
        elif t is CpAsyncCommit:
            self("cp.async.commit_group;")
        elif t is MbarInit:
            for name, count in ins.arrays:
                stages, _ = self.L.arrays[name]
                step = self.stage_step(name, stages)
                if step is not None:  # a loop over the stages (structured emission)
                    base = self.L.bar_offset[(name, 0)]

                    def init(i: str, base: int = base, step: int = step,
                             count: int = count) -> None:
                        a = self.smem_addr(F.SymOff(base, step, i))
                        self(f"mbarrier.init.shared::cta.b64 [{a}], {count & 0xFFFFFFFF};")
                    self.stage_loop(stages, init)
                    continue
                for s in range(stages):
                    a = self.smem_addr(self.L.bar_offset[(name, s)])
                    self(f"mbarrier.init.shared::cta.b64 [{a}], {count & 0xFFFFFFFF};")
        elif t is FenceMbarInit:
            self("fence.mbarrier_init.release.cluster;")
        elif t is GmemAtomic:
            self.gmem_update(ins, st)
        elif t is GmemFence:
            # PTX ISA "membar/fence": fence.acq_rel is a lightweight fence; with a relaxed
            # load before it an acquire pattern, with a relaxed update after it a release
            # pattern ("Memory Consistency Model"); CUTLASS barrier.h red_release
            self("fence.acq_rel.gpu;")
        elif t in (Nop, Fail, Exit):
            pass
        else:
            raise Unsupported(f"unsupported: {t.__name__} in the PTX emitter")

    def _tx_op(self, op: str, a: str, scope: str, tx: int) -> None:
        space = "shared::cluster" if scope == "cluster" else "shared::cta"
        if tx < 0:
            raise Unsupported(f"unsupported: {op} with a negative byte count ({tx})")
        self(f"mbarrier.{op}.relaxed.{scope}.{space}.b64 [{a}], {tx};")

    def thread_arrivals(self, ins: Arrive) -> bool:
        """Lower ``ins`` as count-1 arrivals of separate lanes (``EmitOptions.arrivals``):
        when its arrivals fit in a warp, it is no ``arrive_drop``, and it has no ghost
        effect after it (a stamp store after the release would race)."""
        if self.o.arrivals != "thread" or ins.drop or ins.post:
            return False
        live = [a for a in ins.arrivals if self.bar_exists(a.bar) and a.count >= 0]
        return 0 < sum(a.count for a in live) <= WARP_SIZE and \
            all(a.count > 0 and a.tx >= 0 for a in live)

    def arrive_threads(self, ins: Arrive) -> None:
        """Lane ``l`` of the warp makes one arrival of count 1: the arrivals of ``ins`` in
        order, ``count`` lanes each (the first lane of an arrival also expects its
        ``tx``), as the threads of a CUTLASS ``CooperativeGroup`` do
        (``cutlass/pipeline/sm90.py`` consumer_release: every thread arrives; remote
        targets per lane through ``mapa``).  Arrivals commute on an mbarrier, so the
        count-``n`` step of the model is the same phase change (PTX ISA
        ``mbarrier.arrive``)."""
        live = [a for a in ins.arrivals if self.bar_exists(a.bar) and a.count >= 0]
        if self.cluster and live and all(a.tx == live[0].tx for a in live) and \
                (live[0].tx == 0 or all(a.count == 1 for a in live)) and \
                len({(a.bar.array, a.bar.stage) for a in live}) == 1 and \
                live[0].bar.array in self.remote_arrays:
            self.arrive_ranked(live, ins.scope, live[0].tx)
            return
        lane = 0
        for arr in ins.arrivals:
            if not self.bar_exists(arr.bar) or arr.count < 0:
                continue
            a, remote = self.cluster_addr(self.bar_off(arr.bar), arr.bar.cta)
            space = "shared::cluster" if remote else "shared::cta"
            # the release scope the model gives the arrive (CUTLASS's default ``.cta``,
            # also for remote arrives: ``ClusterBarrier::arrive(cta_id)``)
            scope = ins.scope if ins.scope in ("cta", "cluster") else "cluster"
            dst = "_" if remote else self.rd()
            lo, hi = lane, lane + arr.count
            lane = hi
            skip, pr = self.fresh("ta"), self.p()
            if arr.tx:
                first = self.fresh("tx")
                self(f"setp.ne.u32 {pr}, %k_lane, {lo};")
                self(f"@{pr} bra {first};")
                self(f"mbarrier.arrive.expect_tx.release.{scope}.{space}.b64 {dst}, [{a}], "
                     f"{arr.tx};")
                self(f"bra {skip};")
                self.label(first)
                lo += 1
                if lo == hi:
                    self.label(skip)
                    continue
            q = self.p()
            self(f"setp.lt.u32 {pr}, %k_lane, {lo};")
            self(f"setp.ge.u32 {q}, %k_lane, {hi};")
            self(f"or.pred {pr}, {pr}, {q};")
            self(f"@{pr} bra {skip};")
            self(f"mbarrier.arrive.release.{scope}.{space}.b64 {dst}, [{a}];")
            self.label(skip)

    def arrive_ranked(self, live: list, scope: str, tx: int = 0) -> None:
        """One code path for the arrivals of a warp on one barrier of several CTAs (or of
        another CTA): lane ``l`` computes its target CTA's rank from its lane index, maps
        the barrier's offset into that CTA (``mapa``, PTX ISA 9.7.9.23: the own CTA's
        rank maps to its own barrier) and arrives once with count 1 through
        ``shared::cluster``, as CUTLASS's ``consumer_release`` does in a cluster
        (``ClusterBarrier::arrive(cta_id, pred)``: the signalling lanes pick the
        destination CTA at run time).  The same arrivals as ``arrive_threads``' separate
        instructions: ``count`` lanes per destination, at the model's release scope.
        With ``tx`` (every destination one lane expecting ``tx`` bytes: a multicast
        CLC or TMA transaction count) each lane's arrive is ``arrive.expect_tx``."""
        scope = scope if scope in ("cta", "cluster") else "cluster"
        a = self.smem_addr(self.bar_off(live[0].bar))
        ranks = [arr.bar.cta for arr in live]
        if all(arr.count == 1 for arr in live) and len(set(ranks)) == len(ranks) and \
                max(ranks) < WARP_SIZE:
            # one arrival per destination CTA: lane r signals CTA r, as CUTLASS's
            # signalling threads do (``sm90.py`` PipelineTmaAsync: a lane's destination
            # is its own index; it signals where that CTA is in the multicast set)
            bits, skip, pr, m = self.r(), self.fresh("ta"), self.p(), self.r()
            self(f"mov.u32 {bits}, {sum(1 << r for r in ranks)};")
            self(f"shr.b32 {bits}, {bits}, %k_lane;")
            self(f"and.b32 {bits}, {bits}, 1;")
            self(f"setp.eq.u32 {pr}, {bits}, 0;")
            self(f"@{pr} bra {skip};")
            self(f"mapa.shared::cluster.u32 {m}, {a}, %k_lane;")
            op = f"arrive.expect_tx.release.{scope}.shared::cluster.b64 _, [{m}], {tx}" \
                if tx else f"arrive.release.{scope}.shared::cluster.b64 _, [{m}]"
            self(f"mbarrier.{op};")
            self.label(skip)
            return
        rank = self.r()
        self(f"mov.u32 {rank}, {live[0].bar.cta};")
        hi = live[0].count
        for arr in live[1:]:
            pr = self.p()
            self(f"setp.ge.u32 {pr}, %k_lane, {hi};")
            self(f"@{pr} mov.u32 {rank}, {arr.bar.cta};")
            hi += arr.count
        m, skip, pr = self.r(), self.fresh("ta"), self.p()
        self(f"mapa.shared::cluster.u32 {m}, {a}, {rank};")
        self(f"setp.ge.u32 {pr}, %k_lane, {hi};")
        self(f"@{pr} bra {skip};")
        if tx:
            self(f"mbarrier.arrive.expect_tx.release.{scope}.shared::cluster.b64 _, [{m}], "
                 f"{tx};")
        else:
            self(f"mbarrier.arrive.release.{scope}.shared::cluster.b64 _, [{m}];")
        self.label(skip)

    def arrive(self, ins: Arrive, st: "_Step") -> None:
        # ins.scope (the model's release scope) is not lowered: remote arrives and every
        # arrive of a cluster kernel already use .release.cluster, the stronger form
        observed = False
        for arr in ins.arrivals:
            if not self.bar_exists(arr.bar) or arr.count < 0:
                continue
            a, remote = self.cluster_addr(self.bar_off(arr.bar), arr.bar.cta)
            if arr.tx < 0:
                raise Unsupported("unsupported: arrive.expect_tx with a negative byte count")
            if remote:
                scope = "release.cluster.shared::cluster"
                if ins.drop:
                    if arr.tx:
                        self._tx_op("expect_tx", a, "cluster", arr.tx)
                    self(f"mbarrier.arrive_drop.{scope}.b64 _, [{a}], {arr.count};")
                elif arr.tx and arr.count == 1:
                    self(f"mbarrier.arrive.expect_tx.{scope}.b64 _, [{a}], {arr.tx};")
                else:
                    if arr.tx:
                        self._tx_op("expect_tx", a, "cluster", arr.tx)
                    if arr.count:
                        self(f"mbarrier.arrive.{scope}.b64 _, [{a}], {arr.count};")
                continue
            scope = f"release.{self.sem_scope}.shared::cta"
            state = self.rd()
            if ins.drop:
                if arr.tx:
                    self._tx_op("expect_tx", a, "cta", arr.tx)
                self(f"mbarrier.arrive_drop.{scope}.b64 {state}, [{a}], {arr.count};")
            elif arr.tx and arr.count == 1:
                self(f"mbarrier.arrive.expect_tx.{scope}.b64 {state}, [{a}], {arr.tx};")
            elif arr.count == 0:
                if arr.tx:
                    self._tx_op("expect_tx", a, "cta", arr.tx)
                continue
            else:
                if arr.tx:
                    self._tx_op("expect_tx", a, "cta", arr.tx)
                self(f"mbarrier.arrive.{scope}.b64 {state}, [{a}], {arr.count};")
            if not observed:
                pend = self.r()
                self(f"mbarrier.pending_count.b64 {pend}, {state};")
                st.obs0 = pend
                self(f"or.b32 {st.flags}, {st.flags}, {E.F_PENDING};")
                observed = True

    def src_addr(self, pc: int, extra: int = 0, stream: bool = False) -> str:
        s = self.rd()
        per = self.fold_region(pc)
        if per is not None:  # a folded copy's region: first copy's + copy * distance
            self(f"mad.wide.s32 {s}, {self.fold_it}, {per[1]}, {per[0] + extra};")
            self(f"add.u64 {s}, {s}, %src;")
        else:
            reg = self.L.src[(self.prog.cta, self.prog.warp, pc)]  # type: ignore[union-attr]
            self(f"add.u64 {s}, %src, {reg.offset + extra};")
        if stream and self.stream:
            self(f"add.u64 {s}, {s}, %srcoff;")
        return s

    # ---- streaming sources (structured loops without checks)

    def streams(self, prog: AgentProgram) -> bool:
        """Does this warp's loop read fresh global memory on every turn?  The unrolled
        programs give every TMA load its own source region; a structured loop repeats
        its loads' pcs every period, so without an advance it would read the same
        regions again (L2 hits, a benchmark measuring the cache).  Only without checks:
        the runner writes data stamps into the first period's regions alone."""
        return bool(self.args) and self.o.stream and not self.o.checks and any(
            isinstance(i, Jump) and i.target <= pc for pc, i in enumerate(prog.code)) and \
            any(isinstance(i, TmaLoad) and i.kind != "clc" for i in prog.code)

    def advance_source(self) -> None:
        """At the loop's back edge: the next period reads the next ``src_bytes`` of the
        cluster's source; past the room the runner gave (``%src_stride``), it starts
        over (never out of bounds, whatever the trip count)."""
        nxt, end, pr = self.rd(), self.rd(), self.p()
        self(f"add.u64 {nxt}, %srcoff, {self.L.src_bytes};")
        self(f"add.u64 {end}, {nxt}, {self.L.src_bytes};")
        self(f"setp.gt.u64 {pr}, {end}, %src_stride;")
        self(f"selp.u64 %srcoff, 0, {nxt}, {pr};")

    def src_periods(self) -> int:
        """How many periods of source the loops read: the trip count over the TMA loads
        of one turn of the shortest streaming cycle (at least one load per iteration),
        plus one for the turn the loop leaves early."""
        k = max(self.args.values(), default=0)
        best = 0
        for prog in self.ck.programs:
            for pc, i in enumerate(prog.code):
                if isinstance(i, Jump) and i.target <= pc:
                    n = sum(1 for x in prog.code[i.target:pc]
                            if isinstance(x, TmaLoad) and x.kind != "clc")
                    if n:
                        best = max(best, -(-k // n) + 1)
        return max(best, 1)

    def tma(self, pc: int, ins: TmaLoad) -> None:
        src = self.src_addr(pc, stream=True)
        # the slot from the program's own instruction: a folded body's ``ins`` names its
        # stage by a register, which the walk back to the fill's earlier loads cannot match
        key = delivery_key(self.prog, pc, self.prog.code[pc])
        normal = [d for d in ins.deliveries if d.buf is not None and not is_split(d)]
        split = [d for d in ins.deliveries if d.buf is not None and is_split(d)]
        for d in ins.deliveries:
            if d.buf is None:
                raise Unsupported("unsupported: a TMA delivery without a destination buffer")
        if normal:
            same = len({(d.bar.array, d.bar.stage, d.buf.buffer, d.buf.stage, d.bytes)
                        for d in normal}) == 1
            if len(normal) > 1 and same and len({d.buf.cta for d in normal}) == len(normal):
                mask = sum(1 << d.buf.cta for d in normal)
                self.bulk_copy(normal[0], key, src, mask)
            else:
                for d in normal:
                    self.bulk_copy(d, key, src, None)
        for d in split:
            self.split_copy(d, key, src)

    def bulk_copy(self, d: Any, key: tuple, src: str, mask: Optional[int]) -> None:
        """cp.async.bulk global -> shared::cluster completing tx on ``d.bar`` (same CTA)."""
        if not self.bar_exists(d.bar):
            return
        slot = self.slot_off(d.buf, key)
        parts = [(slot, 0, d.bytes)]
        if self.L.compact and d.bytes > STAMP_BYTES:
            parts = [(slot, 0, STAMP_BYTES),
                     (self.L.sink_offset, STAMP_BYTES, d.bytes - STAMP_BYTES)]
        for dst_off, src_off, n in parts:
            s = src
            if src_off:
                s = self.rd()
                self(f"add.u64 {s}, {src}, {src_off};")
            if mask is not None:
                dst = self.smem_addr(dst_off)
                bar = self.smem_addr(self.bar_off(d.bar))
                h = self.R.new("h")
                self(f"mov.b16 {h}, {mask};")
                self("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                     f".multicast::cluster [{dst}], [{s}], {n}, [{bar}], {h};")
            else:
                dst, _ = self.cluster_addr(dst_off, d.buf.cta)
                bar, _ = self.cluster_addr(self.bar_off(d.bar), d.bar.cta)
                self("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                     f"[{dst}], [{s}], {n}, [{bar}];")

    def split_copy(self, d: Any, key: tuple, src: str) -> None:
        """Data of ``d.buf.cta``, tx on ``d.bar`` in another CTA (``cta_group::2``)."""
        if not self.bar_exists(d.bar):
            return
        skey = key + ("split",)
        if self.b100:
            dst, _ = self.cluster_addr(self.slot_off(d.buf, skey), d.buf.cta)
            bar, _ = self.cluster_addr(self.bar_off(d.bar), d.bar.cta)
            c0 = self.imm(0)
            self("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx"
                 f"::bytes.cta_group::2 [{dst}], [%tmap, {{{c0}}}], [{bar}];")
            return
        # sm_90a: a bulk copy may complete tx only in the CTA it writes to, so the
        # emulated slot lives in the barrier's CTA (layout.py: Slot.phys); readers of
        # the logical buffer read it there.
        home = BufRef(d.bar.cta, d.buf.buffer, d.buf.stage)
        self.bulk_copy(replace(d, buf=home), skey, src, None)

    def clc(self, pc: int, ins: TmaLoad, st: "_Step") -> None:
        ds = [d for d in ins.deliveries if d.buf is not None]
        key = delivery_key(self.prog, pc, self.prog.code[pc])  # as in ``tma``
        if self.b100:
            own = [d for d in ds if d.buf.cta == self.prog.cta]  # type: ignore[union-attr]
            d = own[0] if own else ds[0]
            dst = self.smem_addr(self.slot_off(d.buf, key))
            bar = self.smem_addr(self.bar_off(d.bar))
            mc = ".multicast::cluster::all" if len(ds) > 1 else ""
            self("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx"
                 f"::bytes{mc}.b128 [{dst}], [{bar}];")
            return
        w, pv, ch = self.r(), self.p(), self.r()
        self(f"atom.global.add.u32 {w}, [%work], 1;")
        if ins.may_succeed:
            self(f"setp.lt.u32 {pv}, {w}, %num_tiles;")
        else:  # the grid has no cluster left to cancel: "no more work"
            self(f"setp.ne.u32 {pv}, {w}, {w};")
        self(f"selp.u32 {ch}, 1, 0, {pv};")
        base = self.src_addr(pc)
        alt = self.rd()
        self(f"add.u64 {alt}, {base}, 16;")
        src = self.rd()
        self(f"selp.b64 {src}, {base}, {alt}, {pv};")
        st.obs0 = ch
        self(f"or.b32 {st.flags}, {st.flags}, {E.F_CHOICE};")
        same = len({(d.bar.array, d.bar.stage, d.buf.buffer, d.buf.stage) for d in ds}) == 1
        if len(ds) > 1 and same and all(d.buf.cta == d.bar.cta for d in ds):
            self.bulk_copy(ds[0], key, src, sum(1 << d.buf.cta for d in ds))
        else:
            for d in ds:
                if is_split(d):
                    self.split_copy(d, key, src)
                else:
                    self.bulk_copy(d, key, src, None)
        return

    def tcgen05_commit(self, ins: UmmaCommit) -> None:
        groups: dict[tuple[str, int], list[BarRef]] = {}
        for b in ins.bars:
            if self.bar_exists(b):
                groups.setdefault((b.array, b.stage), []).append(b)
        # the commit's own group (its pipeline's), not the kernel's TMA loads'
        cg = f"cta_group::{ins.cta_group}"
        for (arr, stage), bars in groups.items():
            a = self.smem_addr(self.bar_off(bars[0]))
            ctas = sorted({b.cta for b in bars})
            if ctas == [self.prog.cta]:  # type: ignore[union-attr]
                self(f"tcgen05.commit.{cg}.mbarrier::arrive::one.shared::cluster.b64 [{a}];")
            else:
                h = self.R.new("h")
                self(f"mov.b16 {h}, {sum(1 << c for c in ctas)};")
                self(f"tcgen05.commit.{cg}.mbarrier::arrive::one.shared::cluster"
                     f".multicast::cluster.b64 [{a}], {h};")

    DEFERRABLE = (Arrive, Exit, Nop, TmaLoad, ExpectTx, CompleteTx, CpAsync, CpAsyncArrive,
                  CpAsyncCommit, TmaStore, BulkCommit, UmmaCommit, Fail)

    def umma_defer(self, pc: int, ins: UmmaCommit) -> None:
        """sm_90a: the emulated commit completes after the warp's *next* step when that
        step cannot wait (so a completion after the warp's exit is observable, as with a
        real asynchronous tcgen05.commit); otherwise at once.  Where the next step is
        only known at run time (``plan_commit_deferrals``), a flag marks it pending."""
        code = self.prog.code  # type: ignore[union-attr]
        nxt = pc + 1
        if pc in self.pending:
            self(f"mov.u32 {self.pending[pc]}, 1;")
        elif nxt < len(code) and nxt not in self.targets and \
                isinstance(code[nxt], self.DEFERRABLE):
            self.defer_at.setdefault(nxt, []).append((pc, ins, None))
        else:
            self.umma_fire(pc, ins)

    def next_steps(self, start: int) -> Optional[set[int]]:
        """The steps the warp may execute next from ``start``, through its control flow
        only (``SetLocal``, ``Branch``, ``Jump``: no synchronisation); ``None`` when a
        path ends or reads shared memory (a CLC response) before a step."""
        code = self.prog.code  # type: ignore[union-attr]
        seen: set[int] = set()
        out: set[int] = set()
        todo = [start]
        while todo:
            pc = todo.pop()
            if pc in seen:
                continue
            seen.add(pc)
            if not 0 <= pc < len(code):
                return None
            ins = code[pc]
            if isinstance(ins, Jump):
                todo.append(ins.target)
            elif isinstance(ins, Branch):
                todo += [ins.then, ins.orelse]
            elif isinstance(ins, SetLocal):
                if ins.value.op == "response":
                    return None
                todo.append(pc + 1)
            else:
                out.add(pc)
        return out

    def plan_commit_deferrals(self, prog: AgentProgram) -> None:
        """Where the step after an emulated commit is not the next instruction (a loop of
        structured emission: ``k += 1; if k < k_tiles`` comes between the release and the
        next wait or the exit), defer it along every path as ``umma_defer`` does on the
        straight line: after a next step that cannot wait (``Exit`` in particular, so a
        commit landing after the warp exited stays observable), before one that can.  A
        per-commit flag register says whether the commit is still pending there."""
        for pc, ins in enumerate(prog.code):
            if not isinstance(ins, UmmaCommit):
                continue
            nxt = pc + 1
            if nxt < len(prog.code) and nxt not in self.targets and \
                    isinstance(prog.code[nxt], self.DEFERRABLE):
                continue  # the straight-line case
            succ = self.next_steps(nxt)
            if not succ or not any(isinstance(prog.code[s], self.DEFERRABLE) for s in succ):
                continue  # fires at once, as before
            flag = self.r()
            self(f"mov.u32 {flag}, 0;")
            self.pending[pc] = flag
            for s in sorted(succ):
                where = self.defer_at if isinstance(prog.code[s], self.DEFERRABLE) \
                    else self.fire_before
                where.setdefault(s, []).append((pc, ins, flag))

    def linger_for_exits(self, fires: list) -> None:
        """Before a commit still pending at the warp's exit lands: wait (bounded by
        ``EXIT_LINGER_NS``) until the CTA's other warps have exited (header word 0 counts
        them at ``$EXIT``).  A late completion is a schedule the hardware may take; taking
        it on purpose makes a commit that lands after the CTA exited (the model's
        dangling-arrive-at-exit: a missing ``producer_tail``) show in every run rather
        than when the other warps happen to be faster.  In a correct kernel another warp
        waits for this commit, so the wait runs out and the commit lands as before."""
        go, top = self.fresh("lxgo"), self.fresh("lx")
        flags = [f for _, _, f in fires]
        if all(f is not None for f in flags):
            acc = self.r()
            self(f"mov.u32 {acc}, {flags[0]};")
            for f in flags[1:]:
                self(f"or.b32 {acc}, {acc}, {f};")
            pz = self.p()
            self(f"setp.eq.u32 {pz}, {acc}, 0;")
            self(f"@{pz} bra {go};")
        t0, now, el, c, pr = self.rd(), self.rd(), self.rd(), self.r(), self.p()
        self(f"mov.u64 {t0}, %globaltimer;")
        self.label(top)
        self(f"ld.relaxed.cta.shared.u32 {c}, [%smem];")
        self(f"setp.ge.u32 {pr}, {c}, {self.nw - 1};")
        self(f"@{pr} bra {go};")
        self(f"mov.u64 {now}, %globaltimer;")
        self(f"sub.u64 {el}, {now}, {t0};")
        self(f"setp.gt.u64 {pr}, {el}, {EXIT_LINGER_NS};")
        self(f"@{pr} bra {go};")
        self("nanosleep.u32 64;")
        self(f"bra {top};")
        self.label(go)

    def fire_pending(self, pc: int, ins: UmmaCommit, flag: Optional[str]) -> None:
        """Fire a deferred commit (lane 0): always, or if its flag says it is pending."""
        if flag is None:
            self.umma_fire(pc, ins)
            return
        skip, pr = self.fresh("uf"), self.p()
        self(f"setp.eq.u32 {pr}, {flag}, 0;")
        self(f"@{pr} bra {skip};")
        self.umma_fire(pc, ins)
        self(f"mov.u32 {flag}, 0;")
        self.label(skip)

    def umma_fire(self, pc: int, ins: UmmaCommit) -> None:
        """sm_90a emulation of a tcgen05.commit firing: after the emulated MMA's writes,
        one arrive on each barrier (remote ones through mapa)."""
        st = _Step(self, pc)
        tk = self.ticket()
        self.ghost(ins.effects, st, True)
        for b in ins.bars:
            if not self.bar_exists(b):
                continue
            a, remote = self.cluster_addr(self.bar_off(b), b.cta)
            if remote:
                self(f"mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{a}], 1;")
            else:
                s = self.rd()
                self(f"mbarrier.arrive.release.{self.sem_scope}.shared::cta.b64 {s}, [{a}], 1;")
        self.record(E.K_ENV, pc, tk, "0", st.flags)

    # ---- named barriers

    def named(self, pc: int, ins: NamedBarrierOp, st: "_Step") -> None:
        self.lane0_begin(st)
        self.ghost(ins.pre, st, True)
        tk = self.ticket()
        self.ghost(ins.post, st, True)
        self.record(E.K_STEP, pc, tk, "0", st.flags)
        self.lane0_end(st)
        if not 0 <= ins.id <= 15:
            return
        cnt = "" if ins.count is None else f", {ins.count}"
        if ins.sync:
            op = "bar.sync" if ins.aligned else "barrier.sync"
        else:
            op = "bar.arrive" if ins.aligned else "barrier.arrive"
            if ins.count is None:
                cnt = f", {self.info.block_threads}"
        self(f"{op} {ins.id}{cnt};")


class _PtxVal:
    """A 32-bit register as a value of the model's value interface (``+ k`` emits an
    ``add``): how ``advance_rule`` is lowered."""

    def __init__(self, reg: str, em: "_Emitter"):
        self.reg, self.em = reg, em

    def __add__(self, k: Any) -> "_PtxVal":
        em = self.em
        r = em.r()
        em(f"add.u32 {r}, {self}, {k};")
        return _PtxVal(r, em)

    def __str__(self) -> str:
        return self.reg


class _PtxValues:
    """The value interface (``model/values.py``) on PTX registers: what the model's
    ``advance_rule`` needs (``eq``, ``ite``, ``mod`` by a power of two)."""

    def __init__(self, em: "_Emitter"):
        self.em = em

    def eq(self, a: Any, b: Any) -> str:
        p = self.em.p()
        self.em(f"setp.eq.u32 {p}, {a}, {b};")
        return p

    def ite(self, c: str, a: Any, b: Any) -> _PtxVal:
        r = self.em.r()
        self.em(f"selp.u32 {r}, {a}, {b}, {c};")
        return _PtxVal(r, self.em)

    def mod(self, a: Any, m: int) -> _PtxVal:
        if m & (m - 1):
            raise Unsupported(f"unsupported: a phase count of {m} in registers")
        r = self.em.r()
        self.em(f"and.b32 {r}, {a}, {m - 1};")
        return _PtxVal(r, self.em)


#: steps CUTLASS issues from an ``elect_one`` thread: the bulk-async (TMA) operations and
#: ``tcgen05.commit`` (uniform-datapath instructions; ``lead_guard``)
_ELECTED = (TmaLoad, TmaStore, BulkCommit, BulkWaitRead, UmmaCommit)


class _Step:
    """Per-step registers: observed value, flags, and where lane 0's block ends."""

    def __init__(self, em: _Emitter, pc: int):
        self.pc = pc
        self.flags = em.r()
        em(f"mov.u32 {self.flags}, 0;")
        self.obs0 = "0"
        self.skip = ""
        self.ticket = ""
        self.can_stick = False


def _clean(s: str) -> str:
    return s.replace("\n", " ")[:100]


def emit(ck: CompiledKernel, opts: Optional[EmitOptions] = None) -> Emitted:
    """Lower ``ck`` to PTX (see the module docstring)."""
    return _Emitter(ck, opts or EmitOptions()).emit()


def emit_file(path: str, params: Optional[dict[str, Any]] = None,
              opts: Optional[EmitOptions] = None) -> Emitted:
    """Parse, compile (structured where supported unless ``opts.structured`` is off:
    ``impl/structured.py``) and emit."""
    from ..model.lang.parser import parse_file
    from .structured import compile_for_emission

    opts = opts or EmitOptions()
    c = compile_for_emission(parse_file(path), params or {}, opts.structured)
    em = emit(c.kernel, opts)
    em.note = c.describe()
    folded = sum(1 for v in em.folds.values() if not v.startswith("copies kept"))
    if em.folds:
        em.note += (f"; PipelineState in registers in {folded} of {len(em.folds)} looping "
                    "warps")
        kept: dict[str, list[str]] = {}
        for warp, why in em.folds.items():
            if why.startswith("copies kept: "):
                kept.setdefault(why[len("copies kept: "):], []).append(warp)
        for why, warps in kept.items():  # never a silent difference: say why
            em.note += f"; copies kept in {', '.join(warps)}: {why}"
    return em


__all__ = ["EmitOptions", "Emitted", "Manifest", "emit", "emit_file", "ARCHES", "PARAMS",
           "WARP_SIZE"]
