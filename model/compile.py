"""Compile a kernel (IR) into one program per warp of every CTA.

The kernel body is run by every warp of every CTA, as a CuTe DSL kernel body is.  For
each warp the compiler *specialises* the body (online partial evaluation of a flow
graph): parameters, the warp index, the CTA rank, loop counters, pipeline states,
layouts and masks are known, so pipeline calls lower to instructions with concrete
stage indices, parities and destinations.  Loops are unrolled; a loop whose state
repeats (a persistent ``while True`` loop, whose pipeline states are periodic) closes
into a cycle.  Only values that depend on run-time data -- a ``try_wait`` token, a CLC
response -- stay dynamic; branches on them become ``Branch`` instructions.

The compiler also tracks, statically, which stage buffers the warp owns (``Ghost``), so
that every instruction carries the ghost effects the data-race properties need.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Optional

from . import ir
from .builtins import (MODULE_ROOTS, Builtin, ElectOne, Module, Namespace, PipelineClassRef,
                       builtins_table)
from .cluster import Layout, MAX_CLUSTER_SIZE
from .errors import (CompileTimeout, ConfigError, Unsupported, did_you_mean,
                     misspelt_keyword, param_named, param_setting)
from .groups import WARP_SIZE
from .liveness import Liveness, mentions_arg
from .pipeline_state import PipelineStateVal
from .pipelines.base import Ghost, PipelineBase, PipelineDecl, release_point_effects
from .pipelines.named_barrier import NamedBarrier
from .pipelines.tma_store_fence import TmaStoreFence
from .pipelines.tmem_allocator import TmemAllocator
from . import program as _program
from .program import (AgentProgram, Branch, DynExpr, Exit, Fail, GhostEffect, Instr, Jump,
                      ParamSplit, dyn_args, dyn_locals, dyn_params, dyn_upper_bound,
                      eval_dyn,
                      NamedBarrierOp, NamedWait, Nop, SetLocal, dyn_local)
from .describe import describe  # noqa: F401  (re-exported: messages)
from .properties import Prop
from .values import CONCRETE
from .roles import RoleUse, method_side, misuse_message

#: instructions that release what the warp did before them (PTX ISA 8.8: arrive has
#: release semantics); ``Compiler.attach`` never puts later effects on them
RELEASES = (_program.Arrive, _program.ClusterArrive, _program.CpAsyncArrive,
            _program.UmmaCommit, NamedBarrierOp, _program.GmemAtomic, _program.GmemFence)

MAX_BLOCK_THREADS = 1024

#: safety limit on specialised flow-graph nodes per warp (unrolled loop iterations)
MAX_SPECIALISATIONS = 200_000

#: size limits (spec/language.md "Limits"), chosen from what the engines handle:
#: PipelineAsync with 1024 stages is checked in about 12 s (0.8 GB), with 2048 it stays
#: undecided after 30 s and 1 GB, with 2**20 it never ends.
MAX_STAGES = 1024
#: a for loop is unrolled: 1000 iterations of PipelineAsync are checked in 9 s, 3000 in
#: 64 s; 10**9 used to unroll for minutes before giving up
MAX_TRIP_COUNT = 4096
#: integers a .pipe expression may produce: a GPU kernel's values fit in 64 bits, and
#: ``10 ** 10 ** 10`` must not be computed
MAX_INT_BITS = 64
#: elements of a tuple built with ``*``
MAX_TUPLE_LEN = 4096


def _check_int(v: Any, loc: Optional[ir.Loc]) -> Any:
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > MAX_INT_BITS:
        raise ConfigError(f"integer of {v.bit_length()} bits: values must fit in "
                          f"{MAX_INT_BITS} bits", loc)
    return v


class NeedParams(Unsupported):
    """A value that must be known when the kernel is compiled (a stage count, a product,
    an index) depends on symbolic parameters that the warp's path leaves open.  Inside a
    warp the compiler splits the path on that value and compiles the statement again on
    each side (``_Compiler._attempt``); elsewhere (the launch, role declarations) it is
    the reason the parameter is checked value by value."""

    def __init__(self, expr: DynExpr, loc: Optional[ir.Loc]):
        names = sorted(dyn_params(expr))
        super().__init__(f"unsupported: a value needed before the kernel runs depends on "
                         f"the symbolic parameter{'s' if len(names) > 1 else ''} "
                         f"{', '.join(names)}", loc)
        self.expr = expr


@dataclass(frozen=True)
class KernelInfo:
    """What ``launch(...)`` and the parameters fix."""

    name: str
    params: tuple[tuple[str, Any], ...]
    block_threads: int
    cluster_shape: tuple[int, int, int]
    #: clusters in the grid (``launch(grid=...)``); ``None``: unbounded.  It bounds the
    #: successful CLC ``try_cancel`` responses: a cluster can cancel at most the
    #: ``grid_clusters - 1`` others (PTX ISA 9.7.13.17 clusterlaunchcontrol.try_cancel)
    grid_clusters: Optional[int] = None
    #: clusters the transition system holds: 1, or every cluster of the grid when the
    #: kernel uses global memory (``gmem_flags``/``gmem_buffer``: spec/model.md "several
    #: clusters"); CTA ``c`` of cluster ``k`` is the system's CTA ``k * cluster_size + c``
    clusters: int = 1

    @property
    def num_ctas(self) -> int:
        """CTAs in the transition system (every modelled cluster's)."""
        return self.cluster_size * self.clusters

    def cluster_of(self, cta: int) -> int:
        """The modelled cluster of system CTA ``cta``."""
        return cta // self.cluster_size

    @property
    def num_warps(self) -> int:
        return self.block_threads // WARP_SIZE

    @property
    def cluster_size(self) -> int:
        x, y, z = self.cluster_shape
        return x * y * z


@dataclass(frozen=True)
class CompiledKernel:
    info: KernelInfo
    programs: tuple[AgentProgram, ...]
    pipelines: tuple[PipelineDecl, ...]
    named_barrier_ids: tuple[int, ...]
    source_file: str = ""
    #: symbolic parameters (``compile_kernel(symbolic=...)``) and their domain: the
    #: product of their ranges, one point per value combination
    param_names: tuple[str, ...] = ()
    param_points: tuple[tuple[int, ...], ...] = ()
    #: kernel arguments the programs read at run time (``compile_kernel(runtime=...)``,
    #: structured emission) and the value this compilation gives them: the model runs
    #: the programs with that value, the emitted PTX reads it from a kernel parameter
    runtime_args: tuple[tuple[str, int], ...] = ()

    @property
    def structured(self) -> bool:
        """Compiled with run-time loops (``runtime``) rather than fully unrolled."""
        return bool(self.runtime_args)

    def program(self, cta: int, warp: int) -> AgentProgram:
        for p in self.programs:
            if p.cta == cta and p.warp == warp:
                return p
        raise KeyError((cta, warp))


# --------------------------------------------------------------------------- flow graph


@dataclass
class FNode:
    kind: str  # stmt | branch | jump | end | elect_enter | elect_leave | role_enter | role_leave | order
    stmt: Any = None
    cond: Any = None
    next: int = -1
    then: int = -1
    orelse: int = -1
    loc: ir.Loc = ir.NOLOC
    role: Optional[ir.RoleBlock] = None
    in_loop: bool = False
    #: the ``for`` loop whose counter this node sets (its init and its increment):
    #: structured compilation (``runtime``) keeps such a counter in a run-time local
    loop: Any = None


class _Flow:
    """Turn structured statements into a flow graph with explicit jumps."""

    def __init__(self) -> None:
        self.nodes: list[FNode] = []
        self.end = self.add(FNode("end"))

    def add(self, n: FNode) -> int:
        self.nodes.append(n)
        return len(self.nodes) - 1

    def block(self, stmts: tuple, cont: int, brk: Optional[int], cnt: Optional[int],
              in_elect: bool = False) -> int:
        entry = cont
        for s in reversed(stmts):
            entry = self.stmt(s, entry, brk, cnt, in_elect)
        return entry

    loop_depth = 0

    def stmt(self, s: Any, cont: int, brk: Optional[int], cnt: Optional[int],
             in_elect: bool) -> int:
        if isinstance(s, (ir.Assign, ir.AugAssign, ir.ExprStmt)):
            return self.add(FNode("stmt", stmt=s, next=cont, loc=s.loc,
                                  in_loop=self.loop_depth > 0))
        if isinstance(s, ir.Pass):
            return cont
        if isinstance(s, ir.If):
            t = self.block(s.body, cont, brk, cnt, in_elect)
            e = self.block(s.orelse, cont, brk, cnt, in_elect)
            return self.add(FNode("branch", cond=s.cond, then=t, orelse=e, loc=s.loc))
        if isinstance(s, ir.For):
            head = self.add(FNode("branch", loc=s.loc))
            incr = self.add(FNode("stmt", stmt=ir.AugAssign(s.var, "+", s.step, s.loc),
                                  next=head, loc=s.loc, loop=s))
            after, again = cont, incr
            if not s.constexpr:  # a run-time loop: see _order_through_loop
                after = self.add(FNode("order", stmt=("exit", head, ()), next=cont, loc=s.loc))
                again = self.add(FNode("order", stmt=("end", head, ()), next=incr, loc=s.loc))
            self.loop_depth += 1
            body = self.block(s.body, again, after, again, in_elect)
            self.loop_depth -= 1
            if not s.constexpr:
                body = self.add(FNode("order", stmt=("begin", head, ()), next=body, loc=s.loc))
            n = self.nodes[head]
            n.cond = ("for", s)
            n.then, n.orelse = body, after
            entry = head
            if not s.constexpr:
                entry = self.add(FNode("order", stmt=("enter", head, _names_in(s.body)),
                                       next=head, loc=s.loc))
            return self.add(FNode("stmt", stmt=ir.Assign((s.var,), s.start, False, s.loc),
                                  next=entry, loc=s.loc, loop=s))
        if isinstance(s, ir.While):
            head = self.add(FNode("branch", cond=s.cond, loc=s.loc))
            self.loop_depth += 1
            body = self.block(s.body, head, cont, head, in_elect)
            self.loop_depth -= 1
            self.nodes[head].then, self.nodes[head].orelse = body, cont
            return head
        if isinstance(s, ir.With):
            leave = self.add(FNode("elect_leave", next=cont, loc=s.loc))
            body = self.block(s.body, leave, None, None, True)
            return self.add(FNode("elect_enter", stmt=s.ctx, next=body, loc=s.loc))
        if isinstance(s, ir.RoleBlock):
            leave = self.add(FNode("role_leave", next=cont, loc=s.loc))
            body = self.block(s.body, leave, brk, cnt, in_elect)
            return self.add(FNode("role_enter", role=s, then=body, orelse=cont, loc=s.loc))
        if isinstance(s, ir.Break):
            if brk is None:
                raise ConfigError("'break' outside a loop (or inside 'with elect_one()')", s.loc)
            return self.add(FNode("jump", next=brk, loc=s.loc))
        if isinstance(s, ir.Continue):
            if cnt is None:
                raise ConfigError("'continue' outside a loop (or inside 'with elect_one()')",
                                  s.loc)
            return self.add(FNode("jump", next=cnt, loc=s.loc))
        if isinstance(s, ir.Return):
            if in_elect:
                raise ConfigError("'return' inside 'with elect_one()' is not supported", s.loc)
            return self.add(FNode("jump", next=self.end, loc=s.loc))
        raise ConfigError(f"unsupported statement {type(s).__name__}", getattr(s, "loc", None))


def _names_in(node: Any) -> frozenset:
    """Every variable name an IR subtree mentions."""
    if isinstance(node, ir.Name):
        return frozenset((node.id,))
    if isinstance(node, (tuple, list)):
        return frozenset().union(*[_names_in(x) for x in node]) if node else frozenset()
    if hasattr(node, "__dataclass_fields__"):
        out = frozenset()
        for f in node.__dataclass_fields__:
            if f != "loc":
                out |= _names_in(getattr(node, f))
        return out
    return frozenset()


def _order_through_loop(env: dict, action: str, loop: int, used: frozenset) -> None:
    """A ``PipelineOrder`` object through a run-time ``for`` loop, as CuTe DSL compiles it.

    The DSL traces the body of a ``range``/``cutlass.range`` loop once, into an
    ``scf.for`` whose carried values are the DSL values the loop reassigns; the
    PipelineState inside a PipelineOrder object is not one of them
    (``cutlass/pipeline/sm90.py``: ``wait``/``arrive`` without a state argument use and
    advance ``self.state``).  So every iteration waits and arrives with the state the
    object had at loop entry, and after the loop the object holds the state one traced
    pass of the body left (``tests/cute_kernels/pipeline_order.py`` bug 4 is the lifted
    twin).  ``action``: ``enter`` (keep the entry state), ``begin`` (an iteration starts
    from it), ``end`` (after the first iteration, keep the state it left), ``exit``
    (the object holds that state).  A loop that runs no iteration leaves the entry state
    (the DSL would leave the traced pass's, which the model cannot know without running
    the body): that is UNKNOWN, never a guess.  Only objects the body names (``used``)
    are followed."""
    from .pipelines.pipeline_order import PipelineOrder

    entry, after = f"__order_entry_{loop}__", f"__order_after_{loop}__"
    if action == "enter":
        orders = tuple((k, v) for k, v in sorted(env.items(), key=lambda kv: kv[0])
                       if isinstance(v, PipelineOrder) and k in used)
        if orders:
            env[entry] = orders
    elif action == "begin":
        env.update(dict(env.get(entry, ())))
    elif action == "end":
        if entry in env and after not in env:
            env[after] = tuple((k, env[k]) for k, _ in env[entry] if k in env)
    else:
        if entry in env and after not in env:
            raise Unsupported("unsupported: a run-time loop over a PipelineOrder object "
                              "that runs no full iteration (CuTe DSL leaves the object with "
                              "the state of one traced pass of the body; use "
                              "cutlass.range_constexpr or the explicit state)")
        env.update(dict(env.pop(after, ())))
        env.pop(entry, None)


def _in_degrees(nodes: list[FNode]) -> list[int]:
    deg = [0] * len(nodes)
    for n in nodes:
        for t in (n.next, n.then, n.orelse):
            if t >= 0:
                deg[t] += 1
    return deg


# --------------------------------------------------------------------------- launch


def _static_eval_launch(kernel: ir.Kernel, overrides: dict[str, Any]) -> KernelInfo:
    """Bind parameters and read ``launch(block=..., cluster=...)`` from the top level."""
    params: dict[str, Any] = {}
    names = [p.name for p in kernel.params]
    for k in overrides:
        if k not in names:
            raise ConfigError(f"{param_named(k)}: the kernel has no parameter {k!r} "
                              f"(parameters: {', '.join(names) or 'none'})", kernel.loc,
                              did_you_mean(k, names))
    ev = _Evaluator(None)
    for p in kernel.params:
        if p.name in overrides:
            params[p.name] = overrides[p.name]
        elif p.default is not None:
            params[p.name] = ev.eval_static(p.default, params)
        else:
            raise ConfigError(f"parameter {p.name!r} has no default; pass "
                              f"{param_setting(p.name)}", p.loc)
    env = dict(params)
    block, cluster, grid = None, None, None
    _check_launch_calls(kernel)
    for s in kernel.body:
        if _is_launch_stmt(s):
            kw = {k: ev.eval_static(v, env) for k, v in s.expr.kwargs}
            for k in kw:
                if k not in ("block", "cluster", "grid"):
                    raise ConfigError(f"launch() has no argument {k!r}; expected block=..., "
                                      "cluster=...", s.loc,
                                      did_you_mean(k, ("block", "cluster", "grid")))
            if s.expr.args:
                raise ConfigError("launch() takes keyword arguments: launch(block=N, "
                                  "cluster=(x, y, z))", s.loc)
            block = kw.get("block")
            cluster = kw.get("cluster", (1, 1, 1))
            grid = kw.get("grid")
            loc = s.loc
            break
        if isinstance(s, ir.Assign) and not s.unpack:
            try:
                env[s.targets[0]] = ev.eval_static(s.value, env)
            except (ConfigError, Unsupported):
                pass
    if block is None:
        raise ConfigError("the kernel body must call launch(block=THREADS, cluster=(x, y, z)) "
                          "before anything else", kernel.loc)
    if isinstance(block, (tuple, list)):
        b = 1
        for v in block:
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(f"launch(block={describe(block)}): expected an int or a "
                                  "tuple of ints", loc)
            b *= v
        block = b
    if not isinstance(block, int) or block <= 0 or block % WARP_SIZE or block > MAX_BLOCK_THREADS:
        raise ConfigError(f"launch(block={describe(block)}): the block must be a multiple of 32 threads, "
                          f"between 32 and {MAX_BLOCK_THREADS}", loc)
    if isinstance(cluster, int):
        cluster = (cluster, 1, 1)
    if not isinstance(cluster, (tuple, list)):
        raise ConfigError(f"launch(cluster={describe(cluster)}): expected three positive "
                          "ints", loc)
    cluster = tuple(cluster) + (1,) * (3 - len(tuple(cluster)))
    if len(cluster) != 3 or not all(isinstance(c, int) and c >= 1 for c in cluster):
        raise ConfigError(f"launch(cluster={describe(cluster)}): expected three positive ints", loc)
    size = cluster[0] * cluster[1] * cluster[2]
    if size > MAX_CLUSTER_SIZE:
        raise ConfigError(f"a cluster of {size} CTAs exceeds the hardware limit of "
                          f"{MAX_CLUSTER_SIZE}", loc)
    return KernelInfo(kernel.name, tuple(params.items()), block, cluster,  # type: ignore
                      _grid_clusters(grid, cluster, loc))


def _is_launch_call(e: Any) -> bool:
    return isinstance(e, ir.Call) and isinstance(e.func, ir.Name) and e.func.id == "launch"


def _is_launch_stmt(s: Any) -> bool:
    return isinstance(s, ir.ExprStmt) and _is_launch_call(s.expr)


def _check_launch_calls(kernel: ir.Kernel) -> None:
    """``launch(...)`` is one statement at the top level of the body: a second one, or
    one inside a role, a branch, a loop or an expression, is an error (it would
    otherwise be ignored)."""
    from .lang.parser import _ir_children

    first: Optional[ir.ExprStmt] = None
    top = {id(s) for s in kernel.body if _is_launch_stmt(s)}
    stack: list[Any] = list(reversed(kernel.body))
    calls: list[Any] = []
    while stack:
        node = stack.pop()
        if _is_launch_stmt(node) and id(node) in top:
            if first is not None:
                raise ConfigError(f"launch(...) is called a second time (first at line "
                                  f"{first.loc.line}); a kernel is launched once", node.loc)
            first = node
            stack.extend(node.expr.args)
            stack.extend(v for _k, v in node.expr.kwargs)
            continue
        if _is_launch_call(node):
            calls.append(node)
        stack.extend(_ir_children(node))
    if calls:
        c = min(calls, key=lambda c: (c.loc.line, c.loc.column))
        raise ConfigError("launch(...) must be a statement at the top level of the kernel "
                          "body, not inside a role, a block or an expression", c.loc)


def _grid_clusters(grid: Any, cluster: tuple, loc: Any) -> Optional[int]:
    """Clusters in ``launch(grid=(x, y, z))`` (CTAs per dimension, as in CuTe DSL's
    ``kernel.launch(grid=...)``); ``None`` for no grid (unbounded)."""
    if grid is None:
        return None
    if isinstance(grid, int):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise ConfigError(f"launch(grid={describe(grid)}): expected up to three positive ints (CTAs "
                          "per dimension) or None", loc)
    grid = tuple(grid) + (1,) * (3 - len(grid))
    if not all(isinstance(g, int) and not isinstance(g, bool) and g >= 1 for g in grid):
        raise ConfigError(f"launch(grid={describe(grid)}): expected positive ints", loc)
    for g, c, d in zip(grid, cluster, "xyz"):
        if g % c:
            raise ConfigError(f"launch(grid={describe(grid)}, cluster={describe(cluster)}): the grid's {d} "
                              f"dimension ({g}) is not a multiple of the cluster's ({c})", loc)
    return (grid[0] // cluster[0]) * (grid[1] // cluster[1]) * (grid[2] // cluster[2])


# --------------------------------------------------------------------------- evaluation


class _Evaluator:
    """Static evaluation of expressions (shared by the launch pre-pass and the agents)."""

    def __init__(self, agent: Optional["_Agent"]):
        self.agent = agent
        self.table = builtins_table()

    def lookup(self, name: str, env: dict, loc: ir.Loc) -> Any:
        if name in env:
            return env[name]
        if name in self.table:
            return self.table[name]
        if name in MODULE_ROOTS:
            return Module(name)
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        raise ConfigError(f"name {name!r} is not defined", loc,
                          did_you_mean(name, list(env) + list(self.table) + list(MODULE_ROOTS)))

    def static(self, v: Any, loc: Optional[ir.Loc]) -> Any:
        """``v`` where its value must be known when the kernel is compiled: an expression
        over symbolic parameters alone gets its value where the warp's path fixes it, else
        ``NeedParams`` (the compiler splits the path on it).  Anything else is returned
        as it is."""
        if isinstance(v, tuple):
            return tuple(self.static(x, loc) for x in v)
        if isinstance(v, DynExpr) and v.op != "within" and dyn_params(v) \
                and not dyn_locals(v):
            if self.agent is None:
                raise NeedParams(v, loc)
            return self.agent.compiler.param_value(v, self.agent.env, loc)
        return v

    def eval_static(self, e: Any, env: dict) -> Any:
        v = self.static(self.eval(e, env), e.loc)
        if isinstance(v, DynExpr):
            raise ConfigError("this value must be known before the kernel runs", e.loc)
        return v

    def eval(self, e: Any, env: dict) -> Any:
        if isinstance(e, ir.Const):
            return e.value
        if isinstance(e, ir.Name):
            return self.lookup(e.id, env, e.loc)
        if isinstance(e, ir.TupleExpr):
            return tuple(self.eval(x, env) for x in e.elts)
        if isinstance(e, ir.ListExpr):
            return tuple(self.eval(x, env) for x in e.elts)
        if isinstance(e, ir.Attr):
            return self.attr(self.eval(e.obj, env), e.name, e)
        if isinstance(e, ir.Subscript):
            obj = self.static(self.eval(e.obj, env), e.loc)
            idx = self.static(self.eval(e.index, env), e.loc)
            if isinstance(obj, DynExpr) or isinstance(idx, DynExpr):
                self._unsupported("indexing with a run-time value", e.loc)
            try:
                return obj[idx]
            except (TypeError, IndexError, KeyError) as ex:
                raise ConfigError(f"cannot index {describe(obj)} with {describe(idx)}: {ex}",
                                  e.loc) from None
        if isinstance(e, ir.BinOp):
            return self.binop(e.op, self.eval(e.left, env), self.eval(e.right, env), e.loc)
        if isinstance(e, ir.UnaryOp):
            v = self.eval(e.operand, env)
            if e.op != "not":
                v = self.static(v, e.loc)
            if isinstance(v, DynExpr):
                if e.op == "not":
                    return DynExpr("not", (v,))
                self._unsupported(f"unary {e.op} of a run-time value", e.loc)
            if e.op == "not":
                return not v
            try:
                if e.op == "-":
                    return _check_int(-v, e.loc)
                if e.op == "+":
                    return +v
                return ~v
            except TypeError:
                raise ConfigError(f"cannot apply unary {e.op} to {describe(v)}", e.loc) from None
        if isinstance(e, ir.Compare):
            return self.compare(e.op, self.eval(e.left, env), self.eval(e.right, env), e.loc)
        if isinstance(e, ir.BoolOp):
            vals = []
            for x in e.values:
                v = self.eval(x, env)
                if not isinstance(v, DynExpr):
                    if e.op == "and" and not v:
                        return v if not vals else False
                    if e.op == "or" and v:
                        return v if not vals else True
                    continue
                vals.append(v)
            if not vals:
                return e.op == "and"
            return vals[0] if len(vals) == 1 else DynExpr(e.op, tuple(vals))
        if isinstance(e, ir.IfExp):
            c = self.static(self.eval(e.cond, env), e.loc)
            if isinstance(c, DynExpr):
                self._unsupported("a conditional expression on a run-time value", e.loc)
            return self.eval(e.then if c else e.orelse, env)
        if isinstance(e, ir.Call):
            return self.call(e, env)
        raise ConfigError(f"unsupported expression {type(e).__name__}", getattr(e, "loc", None))

    def _unsupported(self, what: str, loc: ir.Loc) -> None:
        raise Unsupported(f"unsupported: {what}", loc)

    def binop(self, op: str, a: Any, b: Any, loc: ir.Loc) -> Any:
        if op not in ("+", "-"):
            a, b = self.static(a, loc), self.static(b, loc)
        if isinstance(a, DynExpr) or isinstance(b, DynExpr):
            if op in ("+", "-"):
                wrap = lambda x: x if isinstance(x, DynExpr) else DynExpr("const", (x,))  # noqa: E731
                return DynExpr("add" if op == "+" else "sub", (wrap(a), wrap(b)))
            self._unsupported(f"operator {op} on a run-time value", loc)
        try:
            return _check_int(self._binop(op, a, b, loc), loc)
        except ZeroDivisionError:
            raise ConfigError("division by zero", loc) from None
        except TypeError:
            raise ConfigError(f"cannot apply {op} to {describe(a)} and {describe(b)}",
                              loc) from None
        except ValueError as ex:  # a negative shift count
            raise ConfigError(f"{describe(a)} {op} {describe(b)}: {ex}", loc) from None

    def _binop(self, op: str, a: Any, b: Any, loc: ir.Loc) -> Any:
        """``a op b`` on compile-time values, refusing results too large to compute
        (``MAX_INT_BITS``, ``MAX_TUPLE_LEN``) before computing them."""
        ints = all(isinstance(x, int) for x in (a, b))
        if op == "**" and ints:
            if b < 0:
                raise ConfigError(f"{describe(a)} ** {describe(b)}: a negative exponent "
                                  "gives a fraction; values are integers", loc)
            if abs(a) > 1 and (abs(a).bit_length() - 1) * b > MAX_INT_BITS:
                raise ConfigError(f"{describe(a)} ** {describe(b)} does not fit in "
                                  f"{MAX_INT_BITS} bits", loc)
        if op == "<<" and ints and a and b > MAX_INT_BITS:
            raise ConfigError(f"{describe(a)} << {describe(b)} does not fit in "
                              f"{MAX_INT_BITS} bits", loc)
        if op == "*" and not ints:
            seq, n = (a, b) if isinstance(b, int) else (b, a)
            if not isinstance(n, int) or isinstance(n, bool) \
                    or not isinstance(seq, (tuple, str)) \
                    or max(n, 0) * len(seq) > MAX_TUPLE_LEN:
                raise ConfigError(f"cannot apply * to {describe(a)} and {describe(b)}", loc)
        if op == "+" and isinstance(a, (tuple, str)) and isinstance(b, (tuple, str)) \
                and len(a) + len(b) > MAX_TUPLE_LEN:
            raise ConfigError(f"a tuple of more than {MAX_TUPLE_LEN} elements", loc)
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "//":
            return a // b
        if op == "/":
            if isinstance(a, int) and isinstance(b, int) and a % b == 0:
                return a // b
            raise ConfigError("'/' must divide exactly; use '//'", loc)
        if op == "%":
            return a % b
        if op == "**":
            return a ** b
        if op == "<<":
            return a << b
        if op == ">>":
            return a >> b
        if op == "&":
            return a & b
        if op == "|":
            return a | b
        if op == "^":
            return a ^ b
        raise ConfigError(f"unknown operator {op}", loc)

    def compare(self, op: str, a: Any, b: Any, loc: ir.Loc) -> Any:
        if isinstance(a, DynExpr) or isinstance(b, DynExpr):
            wrap = lambda x: x if isinstance(x, DynExpr) else DynExpr("const", (x,))  # noqa: E731
            m = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le"}
            if op in m:
                return DynExpr(m[op], (wrap(a), wrap(b)))
            if op == ">":
                return DynExpr("lt", (wrap(b), wrap(a)))
            if op == ">=":
                return DynExpr("le", (wrap(b), wrap(a)))
            self._unsupported(f"comparison {op} of a run-time value", loc)
        try:
            if op == "==":
                return a == b
            if op == "!=":
                return a != b
            if op == "<":
                return a < b
            if op == "<=":
                return a <= b
            if op == ">":
                return a > b
            if op == ">=":
                return a >= b
            if op == "in":
                return a in b
            if op == "not in":
                return a not in b
        except TypeError:
            raise ConfigError(f"cannot compare {describe(a)} {op} {describe(b)}", loc) from None
        raise ConfigError(f"unknown comparison {op}", loc)

    def attr(self, obj: Any, name: str, e: Any) -> Any:
        loc = e.loc
        if isinstance(obj, Module):
            if name in self.table:
                return self.table[name]
            return Module(f"{obj.path}.{name}")
        if isinstance(obj, Namespace):
            try:
                return obj.get(name)
            except KeyError:
                raise ConfigError(f"{obj.name} has no member {name!r}", loc,
                                  did_you_mean(name, [k for k, _ in obj.members])) from None
        if isinstance(obj, PipelineClassRef):
            if name == "create" and not hasattr(obj.cls, "create"):
                raise ConfigError(f"{obj.name} has no create(); construct it directly: "
                                  f"{obj.name}(...)", loc)
            if name == "create":
                return ("create", obj)
            raise ConfigError(f"{obj.name}.{name} is not supported; use {obj.name}.create(...)",
                              loc)
        if isinstance(obj, PipelineStateVal):
            if name in ("index", "phase", "stages"):
                return getattr(obj, name)
            if name == "count":
                if obj.count is None:
                    raise Unsupported("PipelineState.count inside a loop that never ends", loc)
                return obj.count
            return ("method", obj, name)
        if isinstance(obj, Layout):
            if name in ("shape", "stride"):
                return getattr(obj, name)
            return ("method", obj, name)
        if isinstance(obj, DynExpr):
            self._unsupported(f"attribute {name} of a run-time value", loc)
        if hasattr(obj, "call") or hasattr(obj, "attribute"):
            if self.agent is None:
                raise ConfigError(f"{name} cannot be used here", loc)
            fn = getattr(obj, "m_" + name, None)
            if fn is not None:
                return ("method", obj, name)
            with self.agent.at(loc, name):
                return obj.attribute(self.agent, name)
        raise ConfigError(f"{describe(obj)} has no attribute {name!r}", loc)

    def call(self, e: ir.Call, env: dict) -> Any:
        if self.agent is None:
            f = self.eval(e.func, env)
            if isinstance(f, Builtin) and f.name in ("make_layout", "tiled_divide", "size", "min",
                                                     "max", "abs", "int", "bool", "len",
                                                     "range"):
                args = tuple(self.eval(a, env) for a in e.args)
                kw = {k: self.eval(v, env) for k, v in e.kwargs}
                return f.fn(_StaticCx(e.loc), args, kw)
            raise ConfigError("only constants and arithmetic are allowed here", e.loc)
        return self.agent.call(e, env)


class _StaticCx:
    """The tiny context static builtins get before any warp exists."""

    def __init__(self, loc: ir.Loc):
        self.loc = loc

    def error(self, msg: str, hint: str = "", prop: str = "") -> None:
        raise ConfigError(msg, self.loc, hint)

    def unsupported(self, msg: str) -> None:
        raise Unsupported(f"unsupported: {msg}", self.loc)

    def no_more_kwargs(self, kw: dict, what: str, known: Iterable[str] = ()) -> None:
        if kw:
            self.error(f"{what}: unexpected keyword argument(s) {', '.join(kw)}",
                       _kwarg_hint(kw, known))


# --------------------------------------------------------------------------- one warp


_LANES = "__lanes__"
_ROLE = "__role__"
_GHOST = "__ghost__"
_PARAMS = "__params__"  # symbolic parameter points this warp's branches leave possible
#: the run-time tests of kernel arguments alone this path has taken, with their outcome
#: (structured compilation): the arguments do not change while the kernel runs
_ARG_FACTS = "__arg_facts__"


def _freeze(env: dict) -> tuple:
    return tuple(sorted(env.items(), key=lambda kv: kv[0]))


class _Agent:
    """Specialise the flow graph for one warp; this object is also the ``cx`` that
    pipeline classes and builtins emit through."""

    def __init__(self, compiler: "_Compiler", cta: int, warp: int):
        self.compiler = compiler
        self.kernel = compiler.info
        self.cta = cta
        #: the cluster's index in the grid (``cluster_idx()``); ``cta`` is the rank in it
        self.cluster = compiler.cluster
        self.warp = warp
        self.code: list[Instr] = []
        self.targets: set[int] = set()
        self.memo: dict[tuple, int] = {}
        self.visits: dict[int, int] = {}
        self.worklist: list[tuple[int, str, int, dict]] = []
        self.locals: list[str] = []
        self.role: Optional[str] = None
        self.ev = _Evaluator(self)
        self.env: dict = {}
        self.loc = ir.NOLOC
        self.label = ""
        self.track_count = compiler.track_count
        self.in_loop = False
        self._self_update: Optional[Any] = None
        self._arg_updates: dict[int, Any] = {}
        self._capture: Optional[dict[int, Any]] = None
        #: role-checked pipeline calls of this warp, per pipeline (model/roles.py)
        self.role_uses: dict[str, RoleUse] = {}
        #: pipelines this warp uses from both sides (known from a first compilation):
        #: a call of the side other than the first one's gets a role-misuse Fail
        self.misused: dict[str, RoleUse] = {}

    # ---------------------------------------------------------------- the cx interface

    @property
    def lanes(self) -> tuple[int, ...]:
        return self.env[_LANES]

    @property
    def ghost(self) -> Ghost:
        return self.env[_GHOST]

    @ghost.setter
    def ghost(self, g: Ghost) -> None:
        self.env[_GHOST] = g

    @contextlib.contextmanager
    def at(self, loc: ir.Loc, label: str) -> Iterator[None]:
        old = (self.loc, self.label)
        self.loc, self.label = loc, label
        try:
            yield
        finally:
            self.loc, self.label = old

    def emit(self, instr: Instr) -> int:
        self.code.append(instr)
        return len(self.code) - 1

    def attach(self, effects: tuple[GhostEffect, ...], label: str) -> None:
        """Ghost effects of a statement that is not a synchronisation itself: they run
        atomically after the warp's previous instruction when nothing can jump in
        between, else as a step of their own."""
        if not effects:
            return
        pos = len(self.code)
        # never after a release: what follows a release may happen after another warp
        # has taken the stage back (a read after consumer_release races the producer's
        # next write), so it is a step of its own that others can come before
        if pos and pos not in self.targets and self.code[-1].is_sync \
                and not isinstance(self.code[-1], (Exit, Fail) + RELEASES):
            last = self.code[-1]
            self.code[-1] = replace(last, post=last.post + tuple(effects))
        else:
            self.emit(Nop(loc=self.loc, label=label, post=tuple(effects)))

    def error(self, msg: str, hint: str = "", prop: str = "") -> None:
        if prop:
            msg = f"{msg} [{prop}]"
        raise ConfigError(msg, self.loc, hint)

    def unsupported(self, msg: str) -> None:
        raise Unsupported(f"unsupported: {msg}", self.loc)

    def fail(self, prop: str, message: str, guard: str = "") -> None:
        self.emit(Fail(prop=prop, message=message, loc=self.loc, label=self.label,
                       guard=guard))

    def pipeline_call(self, pipe: PipelineBase, name: str, args: tuple) -> None:
        """Called by ``PipelineBase.call`` before a method of ``pipe`` runs: record the
        side of the call and, for a warp that uses both sides of ``pipe``, put a
        ``role-misuse`` failure before a call of the other side (``model/roles.py``)."""
        side = method_side(name)
        if side is None:
            return
        var = pipe.decl.var
        self.role_uses.setdefault(var, RoleUse(var)).add(side, name, args, self.loc,
                                                         self.label)
        bad = self.misused.get(var)
        if bad is not None and bad.home is not None and side != bad.home.side:
            self.fail(Prop.ROLE_MISUSE,
                      misuse_message(var, side, name, self.label, bad.home))

    def need(self, kw: dict, key: str) -> Any:
        if key not in kw:
            self.error(f"missing argument {key}=", misspelt_keyword(key, kw))
        return kw.pop(key)

    def need_int(self, kw: dict, key: str, minimum: Optional[int] = None) -> int:
        v = self.ev.static(self.need(kw, key), self.loc)
        if isinstance(v, DynExpr) or not isinstance(v, int) or isinstance(v, bool):
            self.error(f"{key} must be a static int, got {describe(v)}")
        if minimum is not None and v < minimum:
            if key == "num_stages":
                self.error(f"num_stages={v}: a pipeline needs at least one stage")
            self.error(f"{key}={v} must be at least {minimum}")
        if key == "num_stages" and v > MAX_STAGES:
            self.error(f"num_stages={describe(v)}: pipeproof checks at most {MAX_STAGES} "
                       "stages (the engines' limit; a kernel's shared memory holds far "
                       "fewer)", hint="check the kernel with the stage count it is "
                                      "launched with (CUTLASS kernels use 2 to 16)")
        if key in ("depth", "length") and v > MAX_STAGES:
            # PipelineOrder's stages and groups: depth * length barriers (2**31 of them
            # kept the explicit engine busy for minutes past --timeout; the fuzz harness)
            self.error(f"{key}={describe(v)}: pipeproof checks at most {MAX_STAGES} "
                       f"(PipelineOrder holds depth * length barriers)")
        return v

    def as_int(self, v: Any, what: str) -> int:
        v = self.ev.static(v, self.loc)
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, DynExpr):
                self.unsupported(f"{what} that depends on run-time data")
            self.error(f"{what} must be an int, got {describe(v)}")
        return v

    def optional_rank(self, kw: dict, key: str) -> Optional[int]:
        v = kw.pop(key, None)
        if v is None:
            return None
        r = self.as_int(v, key)
        if not 0 <= r < self.kernel.cluster_size:
            self.error(f"{key}={r} names a CTA outside the cluster of {self.kernel.cluster_size}",
                       prop=Prop.MASK_OUTSIDE_CLUSTER)
        return r

    def no_more_kwargs(self, kw: dict, what: str, known: Iterable[str] = ()) -> None:
        if kw:
            self.error(f"{what}: unexpected keyword argument(s) {', '.join(sorted(kw))}",
                       _kwarg_hint(kw, known))

    def register(self, decl: PipelineDecl) -> PipelineDecl:
        return self.compiler.register(decl, self.loc, self.compiler.points(self.env))

    def new_local(self, hint: str) -> str:
        name = f"{hint}@{self.loc.line}:{self.loc.column}"
        if name not in self.locals:
            self.locals.append(name)
        return name

    def builtin(self, name: str) -> None:
        b = self.ev.table[name]
        b.fn(self, (), {})

    def branch_unless(self, cond: DynExpr, emit_fn: Callable[[], None]) -> None:
        """``if not cond: emit_fn()`` with a run-time ``cond``."""
        p = self.emit(Branch(cond=cond, then=-1, orelse=-1, loc=self.loc, label=self.label))
        self.code[p] = replace(self.code[p], orelse=p + 1)
        self.targets.add(p + 1)
        emit_fn()
        end = len(self.code)
        self.code[p] = replace(self.code[p], then=end)
        self.targets.add(end)

    def set_arg(self, i: int, value: Any) -> None:
        if self._capture is not None:
            self._capture[i] = value
        else:
            self._arg_updates[i] = value

    def set_self(self, value: Any) -> None:
        self._self_update = value

    @contextlib.contextmanager
    def capture_args(self) -> Iterator[dict]:
        old = self._capture
        self._capture = {}
        try:
            yield self._capture
        finally:
            self._capture = old

    def named_barrier(self, bid: int, count: Optional[int], sync: bool, aligned: bool,
                      label: str) -> None:
        self.compiler.named_ids.add(bid)
        if not 0 <= bid <= 15:
            self.fail(Prop.NAMED_BARRIER_MISUSE, f"named barrier id {bid} is outside 0..15")
            return
        if count is not None:
            if count <= 0 or count % WARP_SIZE:
                self.fail(Prop.NAMED_BARRIER_MISUSE,
                          f"named barrier {bid}: thread count {count} is not a positive "
                          "multiple of 32")
                return
            if count > self.kernel.block_threads:
                self.fail(Prop.NAMED_BARRIER_MISUSE,
                          f"named barrier {bid}: thread count {count} exceeds the block's "
                          f"{self.kernel.block_threads} threads")
                return
        if len(self.lanes) < WARP_SIZE and aligned:
            # PTX ISA bar/barrier: ".aligned ... indicates that all threads in CTA will
            # execute the same barrier instruction"; in divergent code that is
            # undefined behaviour
            self.fail(Prop.NAMED_BARRIER_MISUSE,
                      f"aligned bar.{'sync' if sync else 'arrive'} {bid} inside elect_one(): "
                      "the other lanes of the warp never reach it")
            return
        if len(self.lanes) < WARP_SIZE:
            # the PTX ISA counts a barrier arrival per warp, once its non-exited threads
            # have executed a barrier instruction; what one lane alone does to the count
            # is not modelled (rather than guessed)
            raise Unsupported(f"unsupported: unaligned barrier.{'sync' if sync else 'arrive'} "
                              f"{bid} executed by part of a warp (inside elect_one())",
                              self.loc)
        self.emit(NamedBarrierOp(id=bid, count=count, sync=sync, aligned=aligned, loc=self.loc,
                                 label=label, pre=release_point_effects(self)))
        if sync:
            self.emit(NamedWait(id=bid, loc=self.loc, label=label + " (wait)"))

    def proxy_fence(self) -> tuple[GhostEffect, ...]:
        g = self.ghost
        effects = tuple(GhostEffect("clean", b) for b in sorted(g.dirty))
        self.ghost = replace(g, dirty=frozenset())
        return effects

    def mark_dirty(self, bufs: tuple) -> tuple[GhostEffect, ...]:
        g = self.ghost
        new = tuple(b for b in bufs if b not in g.dirty)
        self.ghost = replace(g, dirty=g.dirty | set(new))
        return tuple(GhostEffect("dirty", b) for b in new)

    def add_umma_effects(self, effects: tuple[GhostEffect, ...]) -> None:
        self.ghost = replace(self.ghost, umma=self.ghost.umma | set(effects))

    def add_cp_async_effect(self, effect: GhostEffect) -> None:
        self.ghost = replace(self.ghost, cp_async=self.ghost.cp_async | {effect})

    def clc_query_index(self, pipe: Any) -> Optional[int]:
        """The number of CLC queries this warp issued on ``pipe`` before this one, along
        the path being specialised (capped at the grid's cluster count); ``None`` when
        the grid is unbounded.  Part of the specialisation state: with a bounded grid the
        scheduler's loop unrolls instead of closing into a cycle."""
        n = self.kernel.grid_clusters
        if n is None:
            return None
        key = f"__clc_q_{pipe.decl.var}__"
        q = self.env.get(key, 0)
        self.env[key] = min(q + 1, n)
        return q

    def read_clc_response(self, pipe: Any, st: Any) -> Any:
        """Read the validity of the CLC response in ``pipe``'s stage ``st.index``.

        With a bounded grid of ``n`` clusters at most ``n - 1`` try_cancel calls succeed,
        and the queries of the one scheduler are answered in order, so a warp's
        ``(n-1)``-th distinct response (counting from 0) and every later one say "no more
        work": the read then returns a static ``False`` and the warp's loop ends.  That
        is checked, not assumed: a valid response there -- possible only if the warp
        reads a stale response or skips one -- is a ``role-misuse`` failure."""
        from .program import GhostEffect as _G

        buf = pipe.buf(st.index)
        dest = self.new_local("clc_valid")
        self.emit(SetLocal(dest=dest, value=DynExpr("response", (buf,)), loc=self.loc,
                           label=f"read CLC response {buf}", pre=(_G("read", buf, -2),)))
        n = self.kernel.grid_clusters
        if n is None:
            return dyn_local(dest)
        key = f"__clc_r_{pipe.decl.var}__"
        r, last = self.env.get(key, (0, None))
        if last == (st.index, st.phase):
            r -= 1  # the same response read again: not a new one
        self.env[key] = (min(r + 1, n), (st.index, st.phase))
        if r < n - 1:
            return dyn_local(dest)
        self.branch_unless(DynExpr("not", (dyn_local(dest),)), lambda: self.fail(
            Prop.ROLE_MISUSE,
            f"{self.label}: this is the warp's CLC response number {r + 1}, which must say "
            f"'no more work' (a grid of {n} clusters lets try_cancel succeed at most "
            f"{n - 1} times), yet it is a valid tile: the warp read a stale response or "
            "skipped one", guard="clc-grid"))
        return False

    # ---------------------------------------------------------------- calls

    def call(self, e: ir.Call, env: dict) -> Any:
        f = self.ev.eval(e.func, env)
        args = tuple(self.ev.eval(a, env) for a in e.args)
        kw = {k: self.ev.eval(v, env) for k, v in e.kwargs}
        if not (isinstance(f, Builtin) and f.name in ("min", "max")):
            # arguments are compile-time values: a symbolic parameter in one splits the
            # warp's path (min/max of one stay symbolic, folded into conditions)
            args = self.ev.static(args, e.loc)
            kw = {k: self.ev.static(v, e.loc) for k, v in kw.items()}
        label = _render_call(e)
        with self.at(e.loc, label):
            if isinstance(f, Builtin):
                return f.fn(self, args, kw)
            if isinstance(f, tuple) and f and f[0] == "create":
                return self.create(f[1], args, kw)
            if isinstance(f, PipelineClassRef) and f.cls in (NamedBarrier, TmaStoreFence,
                                                            TmemAllocator):
                return f.cls.construct(self, args, kw)
            if isinstance(f, tuple) and f and f[0] == "method":
                _tag, obj, name = f
                return self.method(obj, name, args, kw, e)
            if isinstance(f, PipelineClassRef):
                self.error(f"use {f.name}.create(...) to build a {f.name}")
            self.error(f"{_render_expr(e.func)} is not callable")

    def create(self, clsref: PipelineClassRef, args: tuple, kw: dict) -> Any:
        if args:
            self.error(f"{clsref.name}.create takes keyword arguments only")
        var = self.compiler.current_target or f"pipeline_{self.loc.line}"
        return clsref.cls.create(self, var, AskedKwargs(kw))

    def method(self, obj: Any, name: str, args: tuple, kw: dict, e: ir.Call) -> Any:
        if isinstance(obj, PipelineStateVal):
            if args or kw:
                self.error(f"PipelineState.{name}() takes no arguments")
            if name in ("advance", "reverse", "reset_count"):
                self._self_update = getattr(obj, name)()
                return None
            if name == "clone":
                return obj
            self.error(f"PipelineState has no method {name}()",
                       did_you_mean(name, ("advance", "reverse", "reset_count", "clone")))
        if isinstance(obj, Layout):
            if name in ("get_flat_coord", "get_hier_coord"):
                from .builtins import b_get_coord

                return b_get_coord(self, obj, args, kw, hier=name == "get_hier_coord")
            self.error(f"a layout has no method {name}()",
                       did_you_mean(name, ("get_flat_coord", "get_hier_coord")))
        return obj.call(self, name, args, kw)


class AskedKwargs(dict):
    """Keyword arguments that remember the names a constructor looked for (``pop``,
    ``get``, ``in``), so that an unexpected one can get a did-you-mean."""

    def __init__(self, *a: Any, **k: Any):
        super().__init__(*a, **k)
        self.asked: set[str] = set()

    def pop(self, key: Any, *default: Any) -> Any:
        self.asked.add(key)
        return super().pop(key, *default)

    def get(self, key: Any, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.asked.add(key)
        return super().__contains__(key)

    def __getitem__(self, key: Any) -> Any:
        self.asked.add(key)
        return super().__getitem__(key)


def _kwarg_hint(kw: dict, known: Iterable[str]) -> str:
    """did you mean X? for the first unexpected keyword, among ``known`` and the names
    the callee looked for (``AskedKwargs``)."""
    names = set(known) | getattr(kw, "asked", set())
    for k in kw:
        hint = did_you_mean(k, names)
        if hint:
            return hint
    return ""


def _render_expr(e: Any) -> str:
    if isinstance(e, ir.Name):
        return e.id
    if isinstance(e, ir.Attr):
        return f"{_render_expr(e.obj)}.{e.name}"
    if isinstance(e, ir.Const):
        return repr(e.value)
    if isinstance(e, ir.Call):
        return _render_call(e)
    if isinstance(e, ir.TupleExpr):
        return "(" + ", ".join(_render_expr(x) for x in e.elts) + ")"
    if isinstance(e, ir.BinOp):
        return f"{_render_expr(e.left)} {e.op} {_render_expr(e.right)}"
    return "..."


def _render_call(e: ir.Call) -> str:
    parts = [_render_expr(a) for a in e.args] + [f"{k}={_render_expr(v)}" for k, v in e.kwargs]
    s = f"{_render_expr(e.func)}({', '.join(parts)})"
    return s if len(s) < 90 else s[:87] + "..."


# --------------------------------------------------------------------------- the driver


class _Compiler:
    def __init__(self, kernel: ir.Kernel, info: KernelInfo):
        self.kernel = kernel
        self.info = info
        flow = _Flow()
        self.entry = flow.block(kernel.body, flow.end, None, None)
        self.nodes = flow.nodes
        self.end = flow.end
        deg = _in_degrees(self.nodes)
        deg[self.entry] += 1
        self.join = [d > 1 for d in deg]
        #: ``time.monotonic()`` past which compiling gives up (``compile_kernel``)
        self.deadline: Optional[float] = None
        self.timeout = 0.0
        self._ticks = 0
        #: every creation of each pipeline: (declaration, parameter points, location)
        self.decls: dict[str, list[tuple[PipelineDecl, frozenset, ir.Loc]]] = {}
        self.named_ids: set[int] = set()
        self.current_target: Optional[str] = None
        #: the cluster being compiled (``cluster_idx()``); set by ``compile_kernel``
        self.cluster = 0
        #: the kernel declared global memory (``model/pipelines/gmem.py``): every
        #: cluster of the grid is modelled
        self.uses_gmem = False
        #: the kernel reads its cluster's place in the grid (``cluster_idx()``,
        #: ``block_idx()``): the clusters' paths differ, so every one is modelled too
        self.uses_grid = False
        self.track_count = _reads_count(kernel)
        self.param_names: tuple[str, ...] = ()
        self.param_points: tuple[tuple[int, ...], ...] = ()
        #: parameters passed as kernel arguments (structured compilation): ``for`` loops
        #: bounded by them stay run-time loops over a counter local
        self.runtime: frozenset = frozenset()
        #: live variables of the flow graph (structured compilation, ``_drop_dead``)
        self.liveness: Optional[Liveness] = None
        #: visits of one join node before giving up (a loop whose state never repeats)
        self.max_visits = MAX_SPECIALISATIONS // 10
        self._check_roles()

    def _check_roles(self) -> None:
        ev = _Evaluator(None)
        env = dict(self.info.params)
        for s in _walk_stmts(self.kernel.body):
            if isinstance(s, ir.RoleBlock):
                try:
                    warps = _as_tuple(ev.eval_static(s.warps, env))
                except (ConfigError, Unsupported):
                    continue
                if not warps:
                    raise ConfigError(f"role {s.name!r} names no warps", s.loc)
                for w in warps:
                    if isinstance(w, bool) or not isinstance(w, int) \
                            or not 0 <= w < self.info.num_warps:
                        raise ConfigError(
                            f"role {s.name!r} names warp {describe(w)}, but the block has "
                            f"{self.info.num_warps} warps (block={self.info.block_threads})",
                            s.loc)
                if s.ctas is not None:
                    try:
                        ctas = _as_tuple(ev.eval_static(s.ctas, env))
                    except (ConfigError, Unsupported):
                        continue
                    if not ctas:
                        raise ConfigError(f"role {s.name!r} names no CTAs", s.loc)
                    for c in ctas:
                        if isinstance(c, bool) or not isinstance(c, int) \
                                or not 0 <= c < self.info.cluster_size:
                            raise ConfigError(
                                f"role {s.name!r} names CTA {describe(c)}, but the cluster has "
                                f"{self.info.cluster_size} CTAs", s.loc)

    def points(self, env: dict) -> frozenset:
        """The parameter points the warp's path leaves possible (all of them at first)."""
        return env.get(_PARAMS, frozenset(range(max(len(self.param_points), 1))))

    def _value_at(self, e: DynExpr, i: int) -> Any:
        pt, names = self.param_points[i], self.param_names
        return eval_dyn(CONCRETE, e, lambda n: pt[names.index(n)])

    def _values(self, e: DynExpr, env: dict) -> set:
        """The values ``e`` (over symbolic parameters only) takes at the points the path
        leaves possible."""
        return {self._value_at(e, i) for i in self.points(env)}

    def param_value(self, e: DynExpr, env: dict, loc: Optional[ir.Loc]) -> Any:
        """The value of ``e`` (over symbolic parameters only) where every point the path
        leaves possible gives it the same one; else ``NeedParams``."""
        values = self._values(e, env)
        if len(values) != 1:
            raise NeedParams(e, loc)
        return values.pop()

    def _split_on_params(self, a: "_Agent", cond: DynExpr, loc: ir.Loc, env: dict
                         ) -> tuple[Any, tuple[dict, dict]]:
        """A condition on symbolic parameters, with the environments of its two sides.

        The environment carries the parameter points the warp's own branches so far
        leave possible (``_PARAMS``).  Where all of them decide the condition alike it is
        folded to True or False (at run time the run's points are a subset of them,
        narrowed further by other warps' splits).  Otherwise the warp takes a
        ``ParamSplit`` step and the branch after it tests the side taken
        (``DynExpr("within", mask)``, ``model.program.ParamSplit``)."""
        if dyn_locals(cond):
            # run-time data and a parameter: split on the parameter's part where the
            # path leaves it open; then the branch tests run-time data only
            cond = self._fold_fixed(cond, env)
            if dyn_params(cond):
                raise NeedParams(_param_part(cond), loc)
            return cond, (env, env)
        mask = tuple(bool(self._value_at(cond, i)) for i in range(len(self.param_points)))
        cur = self.points(env)
        yes = frozenset(i for i in cur if mask[i])
        if yes == cur:
            return True, (env, env)
        if not yes:
            return False, (env, env)
        return self._emit_split(a, mask, str(cond), loc, env)

    def _fold_fixed(self, e: Any, env: dict) -> Any:
        """``e`` with each part over symbolic parameters alone that the path fixes
        replaced by its value."""
        if not isinstance(e, DynExpr) or e.op in ("local", "const", "within") \
                or not dyn_params(e):
            return e
        if not dyn_locals(e):
            values = self._values(e, env)
            return DynExpr("const", (values.pop(),)) if len(values) == 1 else e
        return DynExpr(e.op, tuple(self._fold_fixed(x, env) for x in e.args))

    def _emit_split(self, a: "_Agent", mask: tuple, text: str, loc: ir.Loc, env: dict
                    ) -> tuple[DynExpr, tuple[dict, dict]]:
        """The ``ParamSplit`` step on the condition ``text`` (true at the points of
        ``mask``): the condition the branch after it tests, and its sides' environments."""
        cur = self.points(env)
        yes = frozenset(i for i in cur if mask[i])
        with a.at(loc, text):
            a.emit(ParamSplit(mask=mask, text=text, loc=loc, label=f"if {text}"))
        return DynExpr("within", (mask,)), (dict(env, **{_PARAMS: yes}),
                                            dict(env, **{_PARAMS: cur - yes}))

    def _fork(self, a: "_Agent", cond: DynExpr, loc: ir.Loc, then: int, orelse: int,
              sides: tuple[dict, dict]) -> None:
        """A branch on a run-time ``cond``: both flow-graph successors are compiled."""
        p = a.emit(Branch(cond=cond, then=-1, orelse=-1, loc=loc, label=f"if {cond}"))
        a.worklist.append((p, "orelse", orelse, dict(sides[1])))
        a.worklist.append((p, "then", then, dict(sides[0])))

    def _attempt(self, a: "_Agent", node: int, env: dict, fn: Callable[[], Any]
                 ) -> tuple[bool, Any]:
        """``(True, fn())``; or, where ``fn`` (one flow-graph node's compilation) needs the
        value of a parameter expression the path leaves open (``NeedParams``), undo what
        it emitted and split the path on that value -- the points that give it the value
        of the first one, and the rest -- compiling ``node`` again on both sides:
        ``(False, None)``.  So a stage count, a product ``t * k_tiles`` or a thread count
        of a symbolic parameter is compiled once per value, after the steps all values
        share."""
        if not self.param_points:
            return True, fn()
        n0, l0, t0, saved = len(a.code), len(a.locals), set(a.targets), dict(env)
        try:
            return True, fn()
        except NeedParams as need:
            del a.code[n0:]
            del a.locals[l0:]
            a.targets = t0
            env.clear()
            env.update(saved)
            first = self._value_at(need.expr, min(self.points(env)))
            mask = tuple(self._value_at(need.expr, i) == first
                         for i in range(len(self.param_points)))
            loc = need.loc or self.nodes[node].loc
            cond, sides = self._emit_split(a, mask, f"{need.expr} == {first!r}", loc, env)
            self._fork(a, cond, loc, node, node, sides)
            return False, None

    def register(self, decl: PipelineDecl, loc: ir.Loc, points: frozenset) -> PipelineDecl:
        """The pipeline ``decl.var`` as one warp creates it, on a path possible at
        ``points``: every warp must create it alike at every point (with a symbolic stage
        count it differs between points)."""
        known = self.decls.setdefault(decl.var, [])
        for old, old_points, old_loc in known:
            if old != decl and old_points & points:
                raise ConfigError(f"pipeline {decl.var!r} is created with different "
                                  f"parameters by different warps or CTAs (first at "
                                  f"{old_loc})", loc)
        if not any(d == decl and p == points for d, p, _ in known):
            known.append((decl, points, loc))
        return decl

    def pipelines(self) -> tuple[PipelineDecl, ...]:
        """One declaration per pipeline, for the state: where a symbolic parameter gives
        it different stage counts, the largest (a run uses the first ``num_stages`` of
        its barriers and buffers).  Anything else that differs is refused."""
        def shape(d: PipelineDecl) -> PipelineDecl:  # d without its sizes
            return replace(d, stages=0, arrays=tuple(replace(x, stages=0) for x in d.arrays))

        out = []
        for var, known in self.decls.items():
            big = max((d for d, _, _ in known), key=lambda d: d.stages)
            for d, _, loc in known:
                if shape(d) != shape(big):
                    raise Unsupported(f"unsupported: pipeline {var!r} is created with "
                                      "barrier counts or buffers that depend on a symbolic "
                                      "parameter (only its sizes may)", loc)
            big = replace(big, arrays=tuple(
                replace(x, stages=max(d.arrays[i].stages for d, _, _ in known))
                for i, x in enumerate(big.arrays)))
            out.append(big)
        return tuple(out)

    def compile_agent(self, cta: int, warp: int) -> AgentProgram:
        """Specialise the body for one warp.  A warp that calls both sides of a pipeline
        (and is not declared a ProducerConsumer of it) is compiled a second time, knowing
        which calls are role misuses (``model/roles.py``)."""
        a = self._compile_agent(cta, warp, {})
        misused = {v: u for v, u in a.role_uses.items() if u.misused()}
        if misused:
            a = self._compile_agent(cta, warp, misused)
        return AgentProgram(cta, warp, a.role or "", tuple(a.code), tuple(a.locals))

    def _compile_agent(self, cta: int, warp: int, misused: dict[str, RoleUse]) -> "_Agent":
        a = _Agent(self, cta, warp)
        a.misused = misused
        env = dict(self.info.params)
        for name in sorted(self.runtime):
            env[name] = DynExpr("arg", (name, env[name]))
        env[_LANES] = tuple(range(WARP_SIZE))
        env[_ROLE] = None
        env[_GHOST] = Ghost()
        a.worklist.append((-1, "", self.entry, env))
        first = True
        while a.worklist:
            pos, which, node, wenv = a.worklist.pop()
            start = self._specialise(a, node, wenv, first)
            first = False
            if pos >= 0:
                a.code[pos] = replace(a.code[pos], **{which: start})
        return a

    def _specialise(self, a: _Agent, node: int, env: dict, fresh: bool) -> int:
        key = (node, _freeze(env))
        if key in a.memo:
            return a.memo[key]
        start = len(a.code)
        a.targets.add(start)
        self._run(a, node, env)
        return start

    def _run(self, a: _Agent, node: int, env: dict) -> None:
        while True:
            n = self.nodes[node]
            self._ticks += 1
            if self.deadline is not None and not self._ticks & 1023 \
                    and time.monotonic() > self.deadline:
                raise CompileTimeout(self.timeout, n.loc)
            if self.join[node]:
                if self.runtime and n.kind == "branch" and isinstance(n.cond, tuple):
                    # at a loop's head only: the code after a run-time loop stays one copy
                    # per exit down to the next loop (``impl/fold.py`` folds such exits;
                    # it cannot fold across a loop that follows)
                    env = self._drop_dead(a, node, env)
                key = (node, _freeze(env))
                if key in a.memo:
                    tgt = a.memo[key]
                    a.targets.add(tgt)
                    a.emit(Jump(target=tgt, loc=n.loc))
                    return
                a.memo[key] = len(a.code)
                a.targets.add(len(a.code))
                cnt = a.visits.get(node, 0) + 1
                a.visits[node] = cnt
                if len(a.code) > MAX_SPECIALISATIONS and cnt <= 2:
                    raise Unsupported(
                        f"unsupported: warp {a.warp} of CTA {a.cta} compiles to more than "
                        f"{MAX_SPECIALISATIONS:,} instructions", n.loc)
                if cnt > self.max_visits or len(a.code) > MAX_SPECIALISATIONS:
                    raise Unsupported(
                        "unsupported: this loop does not reach a repeating state within "
                        f"{cnt} iterations (a counter that grows forever in a loop that "
                        "never ends?)", n.loc)
            a.env = env
            if n.kind == "end":
                a.emit(Exit(loc=n.loc, label="exit", pre=release_point_effects(a)))
                return
            if n.kind == "jump":
                node = n.next
                continue
            if n.kind == "order":
                _order_through_loop(env, *n.stmt)
                node = n.next
                continue
            if n.kind == "stmt" and n.loop is not None and self.runtime \
                    and self._runtime_loop(a, n.loop, env):
                a.in_loop = n.in_loop
                self._stmt(a, n.stmt, env)
                self._counter_local(a, n.loop, env)
                node = n.next
                continue
            if n.kind == "stmt":
                a.in_loop = n.in_loop
                if not self._attempt(a, node, env, lambda: self._stmt(a, n.stmt, env))[0]:
                    return
                node = n.next
                continue
            if n.kind == "elect_enter":
                ctx = a.ev.eval(n.stmt, env)
                if not isinstance(ctx, ElectOne):
                    raise ConfigError("only 'with elect_one():' and 'with role(...):' are "
                                      "supported", n.loc)
                if len(env[_LANES]) < WARP_SIZE:
                    with a.at(n.loc, "elect_one()"):
                        a.fail(Prop.ELECT_MISUSE, "elect_one() inside elect_one(): elect.sync "
                               "over the full warp waits for lanes that never arrive")
                env = dict(env)
                env[_LANES] = (0,)
                env["__lanes_saved__"] = env.get("__lanes_saved__", ()) + (tuple(a.env[_LANES]),)
                node = n.next
                continue
            if n.kind == "elect_leave":
                env = dict(env)
                saved = env["__lanes_saved__"]
                env[_LANES] = saved[-1]
                env["__lanes_saved__"] = saved[:-1]
                if not env["__lanes_saved__"]:
                    del env["__lanes_saved__"]
                node = n.next
                continue
            if n.kind == "role_enter":
                r = n.role
                done, where = self._attempt(a, node, env, lambda: (
                    _as_tuple(a.ev.eval_static(r.warps, env)),
                    None if r.ctas is None else _as_tuple(a.ev.eval_static(r.ctas, env))))
                if not done:
                    return
                warps, ctas = where
                if not warps or ctas == ():
                    raise ConfigError(f"role {r.name!r} names no "
                                      f"{'warps' if not warps else 'CTAs'}", r.loc)
                if a.warp in warps and (ctas is None or a.cta in ctas):
                    env = dict(env)
                    env[_ROLE] = r.name
                    if a.role is None:
                        a.role = r.name
                    elif a.role != r.name and r.name not in a.role.split("+"):
                        a.role = f"{a.role}+{r.name}"
                    node = n.then
                else:
                    node = n.orelse
                continue
            if n.kind == "role_leave":
                env = dict(env)
                env[_ROLE] = None
                node = n.next
                continue
            if n.kind == "branch":
                done, got = self._attempt(a, node, env, lambda: self._condition(a, n, env))
                if not done:
                    return
                cond, sides = got
                if isinstance(cond, DynExpr):
                    self._fork(a, cond, n.loc, n.then, n.orelse, sides)
                    return
                node = n.then if cond else n.orelse
                continue
            raise AssertionError(n.kind)

    def _condition(self, a: _Agent, n: Any, env: dict) -> tuple[Any, tuple[dict, dict]]:
        """A branch node's condition (a for loop's: the next iteration runs), after the
        parameter split it may need, with the environments of its two sides."""
        if isinstance(n.cond, tuple) and n.cond[0] == "for":
            f: ir.For = n.cond[1]
            step = a.ev.eval_static(f.step, env)
            stop = a.ev.eval(f.stop, env)
            if isinstance(stop, DynExpr) and (dyn_locals(stop) or not dyn_params(stop)) \
                    and not (dyn_args(stop) and not dyn_locals(stop)):
                raise Unsupported("unsupported: a for loop whose bound depends on "
                                  "run-time data", f.loc)
            if not isinstance(step, int) or isinstance(step, bool) or step == 0:
                raise ConfigError(f"range() step must be a non-zero int, not "
                                  f"{describe(step)}", f.loc)
            cur = env[f.var]
            for what, v in (("start", cur), ("stop", stop)):
                if isinstance(v, bool) or not isinstance(v, (int, DynExpr)):
                    raise ConfigError(f"range() {what} must be an int, not {describe(v)}",
                                      f.loc)
            hi = dyn_upper_bound(stop) if dyn_args(stop) and step > 0 else None
            if dyn_args(stop) and not isinstance(cur, DynExpr):
                if f.constexpr or hi is None:
                    # structured compilation: a loop that must be unrolled (range_constexpr)
                    # cannot be bounded by a kernel argument
                    raise Unsupported("unsupported: a loop unrolled at compile time whose "
                                      "bound is a run-time kernel argument", f.loc)
                if cur >= hi:  # past the bound: no value of the argument runs it again
                    return False, (env, env)
                # within it: a run-time test (``_bounded_loop``)
                return self._arg_test(a.ev.compare("<", cur, stop, f.loc), env)
            # the loop is unrolled: refuse trip counts beyond what the engines handle
            # before unrolling them (spec/language.md "Limits")
            if not isinstance(cur, DynExpr):
                stops = (self._values(stop, env) if isinstance(stop, DynExpr)
                         and not dyn_locals(stop) else {stop})
                left = max((len(range(cur, x, step)) for x in stops
                            if isinstance(x, int)), default=0)
                if left > MAX_TRIP_COUNT:
                    raise ConfigError(
                        f"this loop runs {left:,} more times; pipeproof unrolls loops and "
                        f"checks at most {MAX_TRIP_COUNT:,} iterations of one loop",
                        f.loc, hint="check the kernel with a smaller trip count (e.g. "
                                    f"{param_setting('k_tiles', 8)}): a pipeline's "
                                    "iterations repeat with period 2 * num_stages")
            # a symbolic trip count gives a parameter split per iteration
            cond = a.ev.compare("<" if step > 0 else ">", env[f.var], stop, f.loc)
        else:
            with a.at(n.loc, "condition"):
                cond = a.ev.eval(n.cond, env)
        if isinstance(cond, DynExpr) and dyn_params(cond):
            return self._split_on_params(a, cond, n.loc, env)
        return self._arg_test(cond, env)

    @staticmethod
    def _arg_test(cond: Any, env: dict) -> tuple[Any, tuple[dict, dict]]:
        """A run-time test of kernel arguments alone (structured compilation) is decided
        once per path: the arguments are constant while the kernel runs, so a path that
        took ``0 < min(k_pipe_mmas, k_tiles)`` in the prologue loop takes it again in the
        loop that drains the same count (the other outcome is a path no launch runs).
        Returns the condition (or its outcome on this path) and the two sides' envs."""
        if not isinstance(cond, DynExpr) or not dyn_args(cond) or dyn_locals(cond) \
                or dyn_params(cond):
            return cond, (env, env)
        facts = env.get(_ARG_FACTS, frozenset())
        for c, v in facts:
            if c == cond:
                return v, (env, env)
        sides = (dict(env), dict(env))
        sides[0][_ARG_FACTS] = facts | {(cond, True)}
        sides[1][_ARG_FACTS] = facts | {(cond, False)}
        return cond, sides

    def _drop_dead(self, a: _Agent, node: int, env: dict) -> dict:
        """``env`` without the variables no path from join ``node`` reads
        (``model/liveness.py``), so that the copies a run-time loop's exits leave (one
        per pipeline state) share what follows once the states are dead; and without
        the kernel-argument tests taken (``_arg_test``) once no live value holds a
        kernel argument (dropping them only costs a run-time test).  Structured
        compilation only: the checker's unrolled programs keep their shape."""
        if self.liveness is None:
            self.liveness = Liveness(self.nodes, _names_in)
        lv = self.liveness
        last = frozenset(h for h in lv.around[node]
                         if h not in lv.unsteady and self._last_iteration(a, lv.loops[h][0], env))
        live = lv.live(node, last)
        from .pipelines.pipeline_order import PipelineOrder  # read by ``order`` nodes
        out = {k: v for k, v in env.items()
               if k.startswith("__") or k in live or isinstance(v, PipelineOrder)}
        if _ARG_FACTS in out and not any(mentions_arg(v) for k, v in out.items()
                                         if k != _ARG_FACTS):
            del out[_ARG_FACTS]
        return out

    @staticmethod
    def _last_iteration(a: _Agent, f: ir.For, env: dict) -> bool:
        """Is the current iteration of compile-time loop ``f`` its last?"""
        cur = env.get(f.var)
        if any(isinstance(e, ir.Call) for e in ir.walk_exprs((f.stop, f.step))):
            return False  # a call may emit or fail: not evaluated twice
        try:
            stop, step = a.ev.eval(f.stop, env), a.ev.eval(f.step, env)
        except Exception:  # noqa: BLE001 - not known here: the loop may go round
            return False
        vals = (cur, stop, step)
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in vals) or not step:
            return False
        return not (cur + step < stop if step > 0 else cur + step > stop)

    def _runtime_loop(self, a: _Agent, f: ir.For, env: dict) -> bool:
        """Is ``f`` a run-time loop: not ``range_constexpr``, its bound a kernel argument
        (an expression over ``runtime`` parameters and compile-time values)?  Not one whose
        trip count has a compile-time bound (``_bounded_loop``)."""
        if f.constexpr:
            return False
        stop = a.ev.eval(f.stop, env)
        return isinstance(stop, DynExpr) and bool(dyn_args(stop)) and not dyn_locals(stop) \
            and self._bounded_loop(a, f, env, stop) is None

    def _bounded_loop(self, a: _Agent, f: ir.For, env: dict, stop: Any) -> Optional[int]:
        """The compile-time bound of a run-time trip count, or ``None``: an upward loop
        from a compile-time start to a kernel-argument bound with a compile-time upper
        bound (``range(min(k_pipe_mmas, k_tiles))``) runs at most that many times, so it
        is unrolled up to the bound with a run-time test before each iteration instead of
        closing into a cycle of ``4 * stages`` copies: the copies of such a loop
        multiply those of the loops after it."""
        if not isinstance(stop, DynExpr) or not dyn_args(stop) or dyn_locals(stop) \
                or dyn_params(stop):
            return None
        hi = dyn_upper_bound(stop)
        if hi is None or any(isinstance(e, ir.Call) for e in ir.walk_exprs((f.start, f.step))):
            return None  # (a call may emit: not evaluated twice)
        start, step = a.ev.eval(f.start, env), a.ev.eval(f.step, env)
        ints = all(isinstance(x, int) and not isinstance(x, bool) for x in (start, step))
        if hi is None or not ints or step <= 0 or len(range(start, hi, step)) > MAX_TRIP_COUNT:
            return None
        return hi

    def _counter_local(self, a: _Agent, f: ir.For, env: dict) -> None:
        """Keep the counter of run-time loop ``f`` in a local: ``SetLocal`` of the value the
        statement just gave it, so every iteration sees the same (symbolic) counter and the
        loop closes into a cycle once the pipeline states repeat (period ``4 * stages``:
        the ghost phase is counted mod 4), as a persistent loop does."""
        name = f"{f.var}@{f.loc.line}:{f.loc.column}"
        if name not in a.locals:
            a.locals.append(name)
        v = env[f.var]
        if isinstance(v, bool) or not isinstance(v, (int, DynExpr)):
            raise ConfigError(f"range() start must be an int, not {describe(v)}", f.loc)
        val = v if isinstance(v, DynExpr) else DynExpr("const", (v,))
        a.emit(SetLocal(dest=name, value=val, loc=f.loc, label=f"{f.var} = {val}"))
        env[f.var] = dyn_local(name)

    def _stmt(self, a: _Agent, s: Any, env: dict) -> None:
        if isinstance(s, ir.Assign):
            self.current_target = s.targets[0] if len(s.targets) == 1 else None
            try:
                v = self._eval_call_stmt(a, s.value, env)
            finally:
                self.current_target = None
            if s.unpack:
                if not isinstance(v, tuple) or len(v) != len(s.targets):
                    raise ConfigError(f"cannot unpack {describe(v)} into {len(s.targets)} names", s.loc)
                for t, x in zip(s.targets, v):
                    if t != "_":
                        env[t] = x
            else:
                if s.targets[0] != "_":
                    env[s.targets[0]] = v
            return
        if isinstance(s, ir.AugAssign):
            cur = a.ev.lookup(s.target, env, s.loc)
            env[s.target] = a.ev.binop(s.op, cur, a.ev.eval(s.value, env), s.loc)
            return
        if isinstance(s, ir.ExprStmt):
            self._eval_call_stmt(a, s.expr, env)
            return
        raise AssertionError(s)

    def _eval_call_stmt(self, a: _Agent, e: Any, env: dict) -> Any:
        """Evaluate an expression; apply the rebinding of mutated receivers/arguments."""
        a._self_update = None
        a._arg_updates = {}
        v = a.ev.eval(e, env)
        if isinstance(e, ir.Call):
            if a._self_update is not None:
                if isinstance(e.func, ir.Attr) and isinstance(e.func.obj, ir.Name):
                    env[e.func.obj.id] = a._self_update
                else:
                    raise Unsupported("unsupported: calling a mutating method on something "
                                      "other than a plain variable", e.loc)
            for i, new in a._arg_updates.items():
                if i < len(e.args) and isinstance(e.args[i], ir.Name):
                    env[e.args[i].id] = new
        a._self_update = None
        a._arg_updates = {}
        return v


def loop_bound_params(kernel: ir.Kernel) -> tuple[str, ...]:
    """The kernel parameters named in the bound of a run-time ``for`` loop (``range``, not
    ``range_constexpr``): the candidates for ``compile_kernel(runtime=...)``."""
    names = {p.name for p in kernel.params}
    found: set[str] = set()
    for s in _walk_stmts(kernel.body):
        if isinstance(s, ir.For) and not s.constexpr:
            found |= _names_in(s.stop) & names
    return tuple(sorted(found))


def _param_part(e: DynExpr) -> DynExpr:
    """The first part of ``e`` over symbolic parameters alone (``e`` mixes them with
    run-time data)."""
    if not dyn_locals(e):
        return e
    for x in e.args:
        if isinstance(x, DynExpr) and dyn_params(x):
            return _param_part(x)
    raise AssertionError(e)


def _walk_stmts(stmts: tuple) -> Iterator[Any]:
    for s in stmts:
        yield s
        for f in ("body", "orelse"):
            sub = getattr(s, f, None)
            if isinstance(sub, tuple):
                yield from _walk_stmts(sub)


def _as_tuple(v: Any) -> tuple:
    if isinstance(v, (tuple, list)):
        return tuple(v)
    if isinstance(v, range):
        return tuple(v)
    return (v,)


def _reads_count(kernel: ir.Kernel) -> bool:
    """Does the kernel read ``.count`` of a state or handle?  If not, states drop it, so
    that persistent loops reach a repeating state."""
    for e in ir.walk_exprs(kernel.body):
        if isinstance(e, ir.Attr) and e.name == "count":
            return True
    return False


#: most points of a symbolic parameter domain (one state bit each)
MAX_PARAM_POINTS = 256


def compile_kernel(kernel: ir.Kernel, overrides: Optional[dict[str, Any]] = None,
                   symbolic: Optional[dict[str, range]] = None,
                   timeout: Optional[float] = None,
                   runtime: Optional[Any] = None) -> CompiledKernel:
    """Specialise ``kernel`` for every warp of every CTA of one cluster.

    ``symbolic``: parameters left symbolic over a range of values (``--param K=LO..HI``):
    conditions on them (trip counts, ``k == K - 1``) become ``ParamSplit`` steps, a warp
    that needs a value of them (a stage count, ``t * K``) splits its path on that value
    (``_Compiler._attempt``), and one transition system covers every value.  A parameter
    the launch needs, or that changes a pipeline's arrive counts, raises ``Unsupported``;
    the caller then checks it value by value.  ``timeout``: seconds after which
    compiling gives up with ``CompileTimeout`` (the command's ``--timeout`` covers the
    unrolling too).

    ``runtime``: parameters passed to the kernel at launch (structured emission,
    ``impl/emit.py``): a ``for`` loop bounded by them stays a loop over a counter local
    (``_Compiler._counter_local``) instead of being unrolled, so the programs' size does
    not depend on the trip count; the programs still run with the value ``overrides``
    (or the default) gives, which ``CompiledKernel.runtime_args`` records.  A use of such
    a parameter that needs its value at compile time raises ``ConfigError`` or
    ``Unsupported`` (the emitter then falls back to the unrolled programs)."""
    symbolic = dict(symbolic or {})
    overrides = dict(overrides or {})
    for k in symbolic:
        overrides[k] = DynExpr("param", (k,))
    points = tuple(itertools.product(*symbolic.values())) if symbolic else ()
    if len(points) > MAX_PARAM_POINTS:
        raise Unsupported(f"unsupported: {len(points)} symbolic parameter values (at most "
                          f"{MAX_PARAM_POINTS})", kernel.loc)
    start = time.monotonic()
    info = _static_eval_launch(kernel, overrides)
    comp = _Compiler(kernel, info)
    if timeout is not None:  # raises CompileTimeout (an Unsupported: UNKNOWN) past it
        comp.deadline, comp.timeout = start + timeout, timeout
    comp.param_names = tuple(symbolic)
    comp.param_points = points
    runtime = frozenset(runtime or ())
    if runtime:
        _check_runtime(runtime, info, symbolic, comp.track_count, kernel.loc)
        comp.runtime = runtime
        comp.max_visits = MAX_RUNTIME_LOOP_VISITS
    progs = []
    for cta in range(info.cluster_size):
        for warp in range(info.num_warps):
            progs.append(comp.compile_agent(cta, warp))
    if comp.uses_gmem or comp.uses_grid:
        info = _grid_info(info, kernel.loc)
        for k in range(1, info.clusters):
            comp.cluster = k
            for cta in range(info.cluster_size):
                for warp in range(info.num_warps):
                    progs.append(_relocate(comp.compile_agent(cta, warp),
                                           k * info.cluster_size))
        comp.info = info
        for prog in progs:
            _check_grid_program(prog, info)
    for prog in progs:
        if comp.deadline is not None and time.monotonic() > comp.deadline:
            raise CompileTimeout(comp.timeout, kernel.loc)
        for ins in prog.code:
            left = _params_in(ins) if symbolic else set()
            if left:
                raise Unsupported(f"unsupported: symbolic parameter {', '.join(sorted(left))} "
                                  f"reaches {type(ins).__name__} {ins.label!r}, not only "
                                  "conditions", ins.loc)
    decls = comp.pipelines()
    rt = tuple((n, int(dict(info.params)[n])) for n in sorted(runtime))
    return CompiledKernel(info, tuple(progs), decls, tuple(sorted(comp.named_ids)),
                          kernel.loc.file, tuple(symbolic), points, rt)


#: structured compilation: visits of one loop head before giving up (the pipeline states
#: of a run-time loop repeat after ``4 * stages`` iterations, times the outer loop's period
#: for a nested one; a state that keeps growing -- a user counter -- never does)
MAX_RUNTIME_LOOP_VISITS = 1024


def _check_runtime(runtime: frozenset, info: KernelInfo, symbolic: dict, track_count: bool,
                   loc: ir.Loc) -> None:
    """Parameters that can be kernel arguments: unsigned 32-bit ints, not symbolic; and
    a kernel that never reads ``PipelineState.count`` (which grows every iteration)."""
    params = dict(info.params)
    for n in sorted(runtime):
        if n not in params:
            raise ConfigError(f"no parameter {n!r} to pass at run time", loc)
        v = params[n]
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 1 << 31:
            raise Unsupported(f"unsupported: run-time parameter {n} = {describe(v)} (a "
                              "non-negative 32-bit int is passed to the kernel)", loc)
        if n in symbolic:
            raise Unsupported(f"unsupported: {n} both symbolic and a run-time argument", loc)
    if track_count:
        raise Unsupported("unsupported: structured emission of a kernel that reads "
                          "PipelineState.count (it grows with every iteration)", loc)


#: most clusters the transition system holds (every warp of each is a state component)
MAX_MODELLED_CLUSTERS = 4


def _grid_info(info: KernelInfo, loc: ir.Loc) -> KernelInfo:
    """A kernel that uses global memory is checked with every cluster of its grid
    (spec/model.md "several clusters"): the grid must be given and small, and its
    clusters one CTA each (the model's cluster-scoped machinery -- multicast masks,
    the cluster barrier, remote arrives -- covers one cluster of the system)."""
    n = info.grid_clusters
    if n is None:
        raise ConfigError("a kernel that uses global memory (gmem_flags/gmem_buffer) or "
                          "its place in the grid (cluster_idx(), block_idx()) needs "
                          "launch(grid=...): every cluster of the grid is checked", loc)
    if n > MAX_MODELLED_CLUSTERS:
        raise Unsupported(f"unsupported: a grid of {n} clusters with global memory or "
                          f"cluster_idx() (at most {MAX_MODELLED_CLUSTERS} are modelled)", loc)
    if n > 1 and info.cluster_size > 1:
        raise Unsupported(f"unsupported: global memory or cluster_idx() in a grid of {n} "
                          f"clusters of {info.cluster_size} CTAs (several clusters are "
                          "modelled only with one CTA per cluster)", loc)
    return replace(info, clusters=n)


def _relocate(x: Any, base: int) -> Any:
    """Program ``x`` compiled for a CTA of cluster 0, moved to the CTAs ``base...`` of
    another cluster: every CTA it names shifts by ``base`` (``program.map_ctas``)."""
    return _program.map_ctas(x, lambda c: c + base)


def _check_grid_program(prog: AgentProgram, info: KernelInfo) -> None:
    """Several modelled clusters: refuse what would need a per-cluster cluster barrier."""
    if info.clusters < 2:
        return
    for ins in prog.code:
        if isinstance(ins, (_program.ClusterArrive, _program.ClusterWait)):
            raise Unsupported("unsupported: a cluster barrier in a kernel whose grid of "
                              f"{info.clusters} clusters is modelled (global memory): use a "
                              "CTA barrier (one CTA per cluster)", ins.loc)


def _params_in(x: Any) -> set[str]:
    """Symbolic parameters left anywhere in an instruction's fields (a compiled program
    may hold them only as ``ParamSplit`` masks)."""
    if isinstance(x, DynExpr):
        return dyn_params(x)
    if isinstance(x, (tuple, list)):
        return set().union(*[_params_in(y) for y in x]) if x else set()
    if hasattr(x, "__dataclass_fields__"):
        return set().union(*[_params_in(getattr(x, f)) for f in x.__dataclass_fields__])
    return set()


def compile_agent(kernel: ir.Kernel, cta: int, warp: int) -> AgentProgram:
    """The program of one warp of ``kernel`` (no symbolic parameters): what
    ``compile_kernel`` produces for it, without compiling the others (the CuTe DSL
    front end's cross-check compiles one pipeline call at a time,
    ``frontend/cute/crosscheck.py``)."""
    info = _static_eval_launch(kernel, {})
    return _Compiler(kernel, info).compile_agent(cta, warp)
