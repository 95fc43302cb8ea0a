"""Trace sites in the user's real CuTe DSL kernel: the instrumentation a conformance
compile applies to the module ``cute.compile`` builds, before the DSL lowers it
(``frontend/cute/capture.py``, ``capture(instrument=...)``).

Every op the lifter turns into a synchronisation step (``frontend/cute/sites.py``) is
numbered ``k`` and tagged with the attribute ``pipeproof.site``; the lifter reads the
same attribute on its clone.  Around the op go two side-effecting inline-assembly
records:

* site ``2k`` *before* it (for a signal: ``mbarrier.arrive``, a TMA issue, a commit,
  ``bar.sync``'s arrival), then ``bar.warp.sync`` so that the ticket is taken before
  any lane of the warp signals;
* site ``2k+1`` *after* it (for a wait that returned), with the op's ``i1`` result (a
  ``try_wait`` token) as the observed value;

each only where a step of the model lifted from the same capture answers to it (the
capture is lifted inside the compile, between tagging and inserting the records).

The lowest active lane of the warp writes the record: a per-cluster ticket
(``atom.global.add``) and a 16-byte event at that index, in the format of
``impl/events.py`` except that ``pc`` holds the site and the last word the warp's
active mask (lanes that diverged record one op twice; the judge merges such records,
``impl/cute_conform.py``).  Every record ends with ``bar.warp.sync`` on that mask, and
jitter makes all of its lanes sleep alike: the instrumentation never splits a warp (the
DSL's own warp-synchronous code, ``elect.sync`` and ``shfl.sync`` on a full mask, needs
its lanes together).  As in pipeproof's own emitted kernels
(``impl/emit.py``), a signal's ticket is taken before it and a wait's after it returns,
so ticket order respects every happens-before edge between records.

The buffers are found through one module global ``pipeproof_trace`` (``u64[8]``:
control-block address; capacity in events per cluster | clusters << 32; jitter word;
seed; event-buffer address), which the harness sets with ``cudaLibraryGetGlobal``
before a launch.  Address 0 turns recording off at run time.  The control blocks
(``clusters`` x ``CTRL_WORDS`` u32: word ``C_TICKET`` counts tickets, ``C_OVERFLOW``
events that did not fit) are in device memory; the events (``clusters x capacity``) in
host memory mapped into the GPU, so that the records of a launch that hangs can be read
while it hangs.  The jitter word (``prob | ns_mask << 16``) makes a warp
sleep a pseudo-random time (``nanosleep``, PTX ISA 9.7.19.5) before a signal with
probability ``prob/256``.

Without a conformance compile none of this runs: the kernel the user ships is the one
``cute.compile`` makes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..frontend.cute.sites import ASM_MARK, RETURN_OPS, SITE_ATTR
from ..frontend.cute.sync_ops import traced_op_names
from . import events as E

GLOBAL = "pipeproof_trace"
GLOBAL_WORDS = 8


@dataclass
class SiteTable:
    """What the instrumentation did: site ``k`` -> (op name, source line)."""

    ops: list[tuple[str, str]] = field(default_factory=list)
    observed: list[int] = field(default_factory=list)  # sites that record a try_wait result

    def describe(self, site: int) -> str:
        k = site // 2
        if not 0 <= k < len(self.ops):
            return f"site {site}"
        name, where = self.ops[k]
        return f"{'after' if site % 2 else 'before'} {name}" + (f" at {where}" if where else "")


def record_ptx(site: int, jitter: bool, obs: bool, before: bool, whole: bool = False) -> str:
    """The inline assembly of one record: ``$0`` is the address of ``pipeproof_trace``,
    ``$1`` (when ``obs``) the observed value; ``whole``: every lane of the warp runs the
    op, so the record first waits for all of them."""
    obs_reg = "$1" if obs else "0"
    hdr_const = E.VALID | E.K_STEP << 24
    lines = [
        f"{ASM_MARK} {site}",
        "{",
        ".reg .pred %ppR, %ppP, %ppQ, %ppJ;",
        ".reg .b32 %ppM, %ppLo, %ppL, %ppB, %ppT, %ppU, %ppC, %ppW, %ppH, %ppK, %ppV, %ppJw;",
        ".reg .b64 %ppBase, %ppCap, %ppA, %ppO, %ppS;",
        # recording off (address 0): nothing (the same for every lane)
        "ld.global.nc.u64 %ppBase, [$0];",
        "setp.ne.u64 %ppR, %ppBase, 0;",
        "@!%ppR bra.uni PP_END;",
    ] + (["bar.warp.sync -1;"] if whole else []) + [
        "activemask.b32 %ppM;",
        # the leader: the lowest active lane
        "neg.s32 %ppLo, %ppM;",
        "and.b32 %ppLo, %ppLo, %ppM;",
        "bfind.u32 %ppL, %ppLo;",
        "mov.u32 %ppT, %laneid;",
        # linear cluster id (x fastest) and the CTA's rank in it
        "mov.u32 %ppC, %clusterid.z;",
        "mov.u32 %ppT, %nclusterid.y;",
        "mov.u32 %ppU, %clusterid.y;",
        "mad.lo.u32 %ppC, %ppC, %ppT, %ppU;",
        "mov.u32 %ppT, %nclusterid.x;",
        "mov.u32 %ppU, %clusterid.x;",
        "mad.lo.u32 %ppC, %ppC, %ppT, %ppU;",
        # linear thread id -> warp
        "mov.u32 %ppW, %tid.z;",
        "mov.u32 %ppT, %ntid.y;",
        "mov.u32 %ppU, %tid.y;",
        "mad.lo.u32 %ppW, %ppW, %ppT, %ppU;",
        "mov.u32 %ppT, %ntid.x;",
        "mov.u32 %ppU, %tid.x;",
        "mad.lo.u32 %ppW, %ppW, %ppT, %ppU;",
        "shr.u32 %ppW, %ppW, 5;",
        "mov.u32 %ppH, %cluster_ctarank;",
        "shl.b32 %ppH, %ppH, 8;",
        "or.b32 %ppH, %ppH, %ppW;",
        f"or.b32 %ppH, %ppH, {hdr_const};",
        # capacity | clusters << 32
        "ld.global.nc.u64 %ppCap, [$0+8];",
        "cvt.u32.u64 %ppK, %ppCap;",
        "shr.u64 %ppS, %ppCap, 32;",
        "cvt.u32.u64 %ppV, %ppS;",
        "setp.lt.and.u32 %ppR, %ppC, %ppV, %ppR;",
        "mov.u32 %ppT, %laneid;",
        "setp.eq.and.u32 %ppP, %ppT, %ppL, %ppR;",
    ]
    if jitter and before:
        # every active lane sleeps the leader's time: jitter never splits the warp
        # (the DSL's warp-synchronous code, elect.sync and shfl.sync with a full mask,
        # needs its lanes together)
        lines += [
            "ld.global.nc.u32 %ppJw, [$0+16];",
            "setp.ne.and.u32 %ppJ, %ppJw, 0, %ppR;",
            "ld.global.nc.u32 %ppT, [$0+24];",
            "mov.u32 %ppU, %clock;",
            "xor.b32 %ppT, %ppT, %ppU;",
            "mad.lo.u32 %ppT, %ppH, 40503, %ppT;",
            f"mad.lo.u32 %ppT, %ppT, 0x9E3779B1, {hex(site * 2654435761 % 2**32)};",
            "shfl.sync.idx.b32 %ppT, %ppT, %ppL, 31, %ppM;",
            "shr.u32 %ppU, %ppT, 24;",
            "and.b32 %ppB, %ppJw, 255;",
            "setp.lt.and.u32 %ppJ, %ppU, %ppB, %ppJ;",
            "shr.u32 %ppB, %ppJw, 16;",
            "and.b32 %ppT, %ppT, %ppB;",
            "@%ppJ nanosleep.u32 %ppT;",
        ]
    lines += [
        # control block of this cluster, then the ticket
        f"mul.wide.u32 %ppO, %ppC, {E.CTRL_WORDS * 4};",
        "add.u64 %ppA, %ppBase, %ppO;",
        f"@%ppP atom.global.add.u32 %ppT, [%ppA+{E.C_TICKET * 4}], 1;",
        "setp.lt.and.u32 %ppQ, %ppT, %ppK, %ppP;",
        "setp.ge.and.u32 %ppJ, %ppT, %ppK, %ppP;",
        f"@%ppJ red.global.add.u32 [%ppA+{E.C_OVERFLOW * 4}], 1;",
        # events of this cluster: in the event buffer (host memory the GPU maps, so
        # that a hung launch's records can still be read)
        "ld.global.nc.u64 %ppA, [$0+32];",
        "mul.lo.u32 %ppU, %ppC, %ppK;",
        "add.u32 %ppU, %ppU, %ppT;",
        f"mul.wide.u32 %ppO, %ppU, {E.EVENT_BYTES};",
        "add.u64 %ppA, %ppA, %ppO;",
        f"@%ppQ st.global.v4.u32 [%ppA], {{%ppH, {site}, {obs_reg}, %ppM}};",
        # the lanes leave together (as they came), and before a signal none of them
        # goes on before the ticket is taken
        "bar.warp.sync %ppM;",
        "PP_END:",
    ]
    lines.append("}")
    return "\n".join(lines)


class Instrumenter:
    """The ``instrument`` callback of ``capture.capture``: called once before the
    module is captured (tag every traced op with its site number) and once with the
    captured text (lift it with ``lift(text)``, then put the records around the ops).

    The lift tells, for each traced op, which lanes run it.  A record of an op that
    every lane of the warp runs starts with ``bar.warp.sync`` on the full warp: lanes
    that an earlier branch (an ``elect_one`` region) let run ahead wait there, so that
    the warp's records come in the order of its program, as in the model where a warp's
    lanes go in lock step."""

    def __init__(self, lift: Callable[[Any], Any], jitter: bool = True,
                 names: Optional[frozenset[str]] = None):
        self.lift = lift
        self.jitter = jitter
        self.names = names or traced_op_names()
        self.table = SiteTable()
        self.targets: list = []
        self.args: tuple = ()
        self.sig: Any = None
        self.lifted: Any = None
        self.error: Optional[BaseException] = None

    def __call__(self, module: Any, args: tuple = (), sig: Any = None,
                 text: Any = None) -> None:
        if text is None:
            self.args, self.sig = args, sig
            self.tag(module)
        else:
            try:
                self.lifted = self.lift(text)
            except Exception as e:  # noqa: BLE001  (re-raised by the caller, after the DSL)
                self.error = e
                return
            ck, lf = self.lifted
            full = {k for k, masks in lf.site_lanes.items() if masks == {FULL_WARP}}
            # every lane reaches the kernel's return (its structured end): the exit's
            # record waits for the whole warp, so that it follows the warp's last
            # records (a release by lane 0 alone, say)
            full |= {k for k, op in enumerate(self.targets) if op.name in RETURN_OPS}
            used = {i.site for p in ck.programs for i in p.code if i.site >= 0}
            self.insert(module, full, used)

    def tag(self, module: Any) -> None:
        from cutlass._mlir import ir

        i64 = ir.IntegerType.get_signless(64)
        gpu_mod = _gpu_module(module)

        def visit(op: Any) -> Any:
            if op.name in self.names:
                self.targets.append(op)
            return ir.WalkResult.ADVANCE

        gpu_mod.walk(visit)
        for k, op in enumerate(self.targets):
            op.attributes[SITE_ATTR] = ir.IntegerAttr.get(i64, k)
            self.table.ops.append((op.name, _where(op)))

    def insert(self, module: Any, full: set[int], used: set[int]) -> None:
        """Records around the tagged ops: only those some lifted step answers to
        (``used``), with a full-warp rendezvous where ``full`` says every lane runs the
        op."""
        from cutlass._mlir import ir
        from cutlass._mlir.dialects import arith, llvm

        loc = ir.Location.unknown()
        i32 = ir.IntegerType.get_signless(32)
        gptr = ir.Type.parse("!llvm.ptr<1>")
        body = _gpu_module(module).regions[0].blocks[0]
        with loc:
            glob = ir.Operation.parse(
                f'llvm.mlir.global external @{GLOBAL}(dense<0> : tensor<{GLOBAL_WORDS}xi64>) '
                f'{{addr_space = 1 : i32}} : !llvm.array<{GLOBAL_WORDS} x i64>')
            ir.InsertionPoint.at_block_begin(body).insert(glob)
        for k, op in enumerate(self.targets):
            whole = k in full
            with loc:
                if 2 * k in used:
                    with ir.InsertionPoint(op):
                        addr = llvm.AddressOfOp(gptr, GLOBAL).result
                        llvm.inline_asm(None, [addr],
                                        record_ptx(2 * k, self.jitter, False, True, whole),
                                        "l", has_side_effects=True)
                if 2 * k + 1 not in used:
                    continue
                obs = None
                res = list(op.results)
                with ir.InsertionPoint.after(op):
                    addr = llvm.AddressOfOp(gptr, GLOBAL).result
                    if len(res) == 1 and str(res[0].type) == "i1":
                        obs = arith.extui(i32, res[0])
                        self.table.observed.append(2 * k + 1)
                    llvm.inline_asm(None, [addr] + ([obs] if obs is not None else []),
                                    record_ptx(2 * k + 1, False, obs is not None, False,
                                               whole),
                                    "l,r" if obs is not None else "l", has_side_effects=True)


FULL_WARP = 0xFFFFFFFF


def _gpu_module(module: Any) -> Any:
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            return op.operation
    raise RuntimeError("the captured module has no gpu.module")


def _where(op: Any) -> str:
    try:
        return str(op.location)[:200]
    except Exception:  # noqa: BLE001
        return ""
