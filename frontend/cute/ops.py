"""What each op of the captured IR means to the lifter: integer arithmetic, control
flow, special registers and CuTe's pointer and layout algebra, evaluated exactly;
floating point and register data left opaque.  Synchronisation ops are in
``sync_ops.py``, data movement in ``data_ops.py``; all register in ``optable.py``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable, Optional

from ...model.program import Branch, DynExpr, Jump, SetLocal
from .mlir_text import Op
from . import coords, shapes
from .optable import TABLE, Handler, op
from .values import (OPAQUE, WARP, Atom, Dyn, Lanes, Ptr, Shaped, Sym, TupleSyntax, View, bit_width,
                     crd2idx, element_bytes, fill, flat_coord, flatten, lane, layout_of,
                     norm, parse_tuple, quoted, size, slice_extent, unsigned, wrap)

def per_lane(f: Callable[[Any, Op, list], Any]) -> Handler:
    """Run ``f(lifter, op, values)`` once per lane when an operand differs by lane."""
    def run(lf: Any, o: Op, env: dict, mask: Any) -> Any:
        vals = lf.operands(o, env)
        if not any(isinstance(v, Lanes) for v in vals):
            return f(lf, o, vals)
        outs = [f(lf, o, [lane(v, i) for v in vals]) for i in range(WARP)]
        if isinstance(outs[0], list):
            return [norm(Lanes(x[k] for x in outs)) for k in range(len(outs[0]))]
        return norm(Lanes(outs))
    return run


def lanewise(f: Callable, *args: Any) -> Any:
    """``f`` on ints, lane by lane; None when an operand is a run-time value."""
    if any(isinstance(a, Dyn) for a in args):
        return None
    if any(not isinstance(a, (int, Lanes)) for a in args):
        return OPAQUE
    if any(isinstance(a, Lanes) for a in args):
        if any(not isinstance(lane(a, i), int) for a in args for i in range(WARP)):
            return OPAQUE
        return norm(Lanes(f(*[lane(a, i) for a in args]) for i in range(WARP)))
    return f(*args)


# --------------------------------------------------------------------------- arith

@op("arith.constant")
def _constant(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    v = o.attrs.get("value", "")
    if v in ("true", "false"):
        return int(v == "true")
    m = re.match(r"(-?\d+)\s*:\s*(i\d+|index)", v)
    return int(m.group(1)) if m else OPAQUE


_BINARY = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b, "arith.andi": lambda a, b: a & b,
    "arith.ori": lambda a, b: a | b, "arith.xori": lambda a, b: a ^ b,
    "arith.shli": lambda a, b: a << b, "arith.shrsi": lambda a, b: a >> b,
    "arith.maxsi": max, "arith.minsi": min,
    "arith.floordivsi": lambda a, b: a // b,
    "arith.divsi": lambda a, b: int(a / b), "arith.remsi": lambda a, b: a - int(a / b) * b,
    "arith.ceildivsi": lambda a, b: -((-a) // b),
}
_DYN_BINARY = {"arith.andi": "and", "arith.ori": "or", "arith.addi": "add",
               "arith.subi": "sub"}


def _as_expr(x: Any) -> Any:
    return x.expr if isinstance(x, Dyn) else DynExpr("const", (x,))


def _dyn_binary(name: str, a: Any, b: Any) -> Dyn:
    """A binary op on a run-time value: the model's expression where it has one."""
    if any(isinstance(x, Dyn) and x.expr is None for x in (a, b)) or \
            any(not isinstance(x, (int, Dyn)) for x in (a, b)):
        why = next((x.why for x in (a, b) if isinstance(x, Dyn) and x.why), "")
        return Dyn(None, why or name)
    if name == "arith.xori" and 1 in (a, b):
        return Dyn(DynExpr("not", (_as_expr(a if b == 1 else b),)))
    if name in _DYN_BINARY:
        return Dyn(DynExpr(_DYN_BINARY[name], (_as_expr(a), _as_expr(b))))
    return Dyn(None, f"{name} of a run-time value")


def _binary(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    a, b = lf.operands(o, env)
    w = bit_width(o.result_types[0])
    f = _BINARY[o.name]
    try:
        r = lanewise(lambda x, y: wrap(f(x, y), w), a, b)
    except ZeroDivisionError:
        return OPAQUE
    return _dyn_binary(o.name, a, b) if r is None else r


for _name in _BINARY:
    TABLE[_name] = _binary


@op("arith.shrui", "arith.divui", "arith.remui", "arith.ceildivui", "arith.maxui",
    "arith.minui")
def _unsigned_binary(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    a, b = lf.operands(o, env)
    w = bit_width(o.result_types[0])
    f = {"arith.shrui": lambda x, y: unsigned(x, w) >> y,
         "arith.divui": lambda x, y: unsigned(x, w) // unsigned(y, w),
         "arith.remui": lambda x, y: unsigned(x, w) % unsigned(y, w),
         "arith.ceildivui": lambda x, y: -(-unsigned(x, w) // unsigned(y, w)),
         "arith.maxui": lambda x, y: max(unsigned(x, w), unsigned(y, w)),
         "arith.minui": lambda x, y: min(unsigned(x, w), unsigned(y, w))}[o.name]
    try:
        r = lanewise(lambda x, y: wrap(f(x, y), w), a, b)
    except ZeroDivisionError:
        return OPAQUE
    return Dyn(None, f"{o.name} of a run-time value") if r is None else r


_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


@op("arith.cmpi")
def _cmpi(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    a, b = lf.operands(o, env)
    pred = o.attrs.get("predicate", "")
    pm = re.match(r"(\d+)", pred)
    p = _PREDICATES[int(pm.group(1))] if pm else pred.strip()
    w = bit_width(o.operand_types[0]) if o.operand_types else 64
    f: Callable[[int, int], bool] = {
        "eq": lambda x, y: x == y, "ne": lambda x, y: x != y,
        "slt": lambda x, y: x < y, "sle": lambda x, y: x <= y,
        "sgt": lambda x, y: x > y, "sge": lambda x, y: x >= y,
        "ult": lambda x, y: unsigned(x, w) < unsigned(y, w),
        "ule": lambda x, y: unsigned(x, w) <= unsigned(y, w),
        "ugt": lambda x, y: unsigned(x, w) > unsigned(y, w),
        "uge": lambda x, y: unsigned(x, w) >= unsigned(y, w)}[p]
    r = lanewise(lambda x, y: int(f(x, y)), a, b)
    if r is not None:
        return r
    if any(isinstance(x, Dyn) and x.expr is None for x in (a, b)) or \
            any(not isinstance(x, (int, Dyn)) for x in (a, b)):
        return Dyn(None, next((x.why for x in (a, b) if isinstance(x, Dyn)), "cmpi"))
    direct = {"eq": "eq", "ne": "ne", "slt": "lt", "sle": "le"}
    if p in direct:
        return Dyn(DynExpr(direct[p], (_as_expr(a), _as_expr(b))))
    if p in ("sgt", "sge"):
        return Dyn(DynExpr({"sgt": "lt", "sge": "le"}[p], (_as_expr(b), _as_expr(a))))
    return Dyn(None, f"unsigned comparison ({p}) of a run-time value")


@op("arith.select")
def _select(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    c, a, b = lf.operands(o, env)
    if isinstance(c, Dyn):
        return a if a == b else Dyn(None, "select on a run-time value")
    if isinstance(c, Lanes):
        return norm(Lanes(lane(a, i) if c[i] else lane(b, i) for i in range(WARP)))
    if not isinstance(c, int):
        return OPAQUE
    return a if c else b


@op("arith.extui", "arith.extsi", "arith.trunci", "arith.index_cast", "arith.index_castui",
    "arith.bitcast", "cute_nvgpu.arch.make_warp_uniform")
def _convert(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    (a,) = lf.operands(o, env)[:1]
    if isinstance(a, (int, Lanes)):
        if o.name == "arith.trunci":
            w = bit_width(o.result_types[0])
            return lanewise(lambda x: wrap(x, w), a)
        if o.name == "arith.extui":
            w = bit_width(o.operand_types[0])
            return lanewise(lambda x: unsigned(x, w), a)
        if o.name == "cute_nvgpu.arch.make_warp_uniform" and isinstance(a, Lanes):
            raise lf.error(o, f"make_warp_uniform of a value that differs between lanes "
                              f"({lf.where(o)})")
    return a


# --------------------------------------------------------------------------- registers

@op("nvvm.read.ptx.sreg.*")
def _sreg(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    r = o.name[len("nvvm.read.ptx.sreg."):]
    L = lf.launch
    w = lf.w
    cx, cy, cz = L.cluster
    gx, gy, gz = L.grid
    table = {
        "tid.x": Lanes(w.warp * WARP + i for i in range(WARP)), "tid.y": 0, "tid.z": 0,
        "ntid.x": L.block, "ntid.y": 1, "ntid.z": 1,
        "laneid": Lanes(range(WARP)), "warpid": w.warp, "nwarpid": L.block // WARP,
        "warpsize": WARP,
        "ctaid.x": w.ctaid[0], "ctaid.y": w.ctaid[1], "ctaid.z": w.ctaid[2],
        "nctaid.x": gx, "nctaid.y": gy, "nctaid.z": gz,
        "cluster.ctarank": w.cta, "cluster.nctarank": cx * cy * cz,
        "cluster.ctaid.x": w.ctaid[0] % cx, "cluster.ctaid.y": w.ctaid[1] % cy,
        "cluster.ctaid.z": w.ctaid[2] % cz,
        "cluster.nctaid.x": cx, "cluster.nctaid.y": cy, "cluster.nctaid.z": cz,
        "clusterid.x": lf.cluster_coord[0], "clusterid.y": lf.cluster_coord[1],
        "clusterid.z": lf.cluster_coord[2],
        "nclusterid.x": max(1, gx // cx), "nclusterid.y": max(1, gy // cy),
        "nclusterid.z": max(1, gz // cz),
        "lanemask.lt": Lanes((1 << i) - 1 for i in range(WARP)),
        "lanemask.le": Lanes((2 << i) - 1 for i in range(WARP)),
        "lanemask.eq": Lanes(1 << i for i in range(WARP)),
    }
    if r not in table:
        raise lf.error(o, f"unsupported special register %{r} ({lf.where(o)})")
    return table[r]


@op("nvvm.fmax", "nvvm.fmin", "nvvm.fabs", "nvvm.rcp.approx.ftz.f", "nvvm.rcp.approx.ftz.d",
    "nvvm.ex2.approx.f", "nvvm.ex2.approx.ftz.f", "nvvm.ex2.approx.d")
def _float_math(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """Floating-point arithmetic in registers (PTX ISA 9.7.3: ``max.f32``, ``rcp.approx``,
    ``ex2.approx``): no memory, no synchronisation; the value does not matter."""
    return OPAQUE


@op("nvvm.elect.sync")
def _elect(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """``elect.sync``: the lowest active lane (PTX ISA 9.7.13.12)."""
    act = lf.active(mask)
    first = act[0] if act else -1
    return Lanes(int(i == first) for i in range(WARP))


@op("nvvm.shfl.sync")
def _shfl(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """A broadcast of lane ``src`` (``idx`` mode): CuTe's warp-uniform idioms."""
    vals = lf.operands(o, env)
    kind = o.attrs.get("kind", "")
    if len(vals) >= 3 and "idx" in kind and isinstance(vals[2], int):
        return lane(vals[1], vals[2] % WARP)
    x = vals[1] if len(vals) > 1 else OPAQUE
    if isinstance(x, int):
        return x
    return Dyn(None, "a shuffle between lanes") if isinstance(x, (Lanes, Dyn)) else OPAQUE


@op("nvvm.vote.sync", "nvvm.vote.ballot.sync")
def _vote(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    vals = lf.operands(o, env)
    pred = vals[-1] if vals else OPAQUE
    act = lf.active(mask)
    kind = o.attrs.get("kind", "ballot")
    if not isinstance(pred, (int, Lanes)):
        return Dyn(None, "a vote over a run-time value")
    bits = [bool(lane(pred, i)) for i in act]
    if "ballot" in kind or o.name.endswith("ballot.sync"):
        return sum(1 << i for i, b in zip(act, bits) if b)
    if "all" in kind:
        return int(all(bits))
    if "any" in kind:
        return int(any(bits))
    return OPAQUE


# --------------------------------------------------------------------------- control

@op("scf.if")
def _if(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    c = lf.val(env, o.operands[0], o)
    if isinstance(c, Sym):  # a branch on symbolic parameters: the path splits
        c = int(lf.decide_points(lf.restrict(c), o))
    then_blk = o.regions[0][0]
    else_blk = o.regions[1][0] if len(o.regions) > 1 and o.regions[1] and \
        (o.regions[1][0].ops or o.regions[1][0].args) else None
    n = len(o.results)
    if isinstance(c, Dyn):
        return _dynamic_if(lf, o, c, then_blk, else_blk, env, mask)
    if isinstance(c, Lanes):
        tm = Lanes(int(bool(c[i]) and bool(lane(mask, i))) for i in range(WARP))
        em = Lanes(int((not c[i]) and bool(lane(mask, i))) for i in range(WARP))
        lf.mask_stack.append((o, mask))  # the lanes before it (Lifter.call_lanes)
        try:
            rt = lf.exec_block(then_blk, env, [], tm) if any(tm) else None
            re_ = lf.exec_block(else_blk, env, [], em) if else_blk and any(em) else None
        finally:
            lf.mask_stack.pop()
        if not n:
            return None
        rt = rt or [None] * n
        re_ = re_ or [None] * n
        out = []
        for a, b in zip(rt, re_):
            if a is None or b is None or a == b:
                out.append(b if a is None else a)
            elif all(isinstance(x, (int, Lanes)) for x in (a, b)):
                out.append(norm(Lanes(lane(a, i) if c[i] else lane(b, i) for i in range(WARP))))
            else:
                out.append(OPAQUE)
        return out
    if c is OPAQUE:
        return _data_if(lf, o, then_blk, else_blk, env, mask)
    if not isinstance(c, int):
        raise lf.error(o, f"a branch on a value pipeproof cannot evaluate ({lf.where(o)})")
    if c:
        r = lf.exec_block(then_blk, env, [], mask)
    elif else_blk is not None:
        r = lf.exec_block(else_blk, env, [], mask)
    else:
        r = None
    return r if n else None


def _data_if(lf: Any, o: Op, then_blk: Any, else_blk: Any, env: dict, mask: Any) -> Any:
    """A branch on register data (floating point: ``if sum == 0.0 or sum != sum``): both
    sides are interpreted, and neither may do anything the model sees -- no
    instruction, no shared-memory access, no run-time decision, no barrier init --
    and the values they leave behind that differ are opaque.  A side that does
    something is an error: which side runs is not known."""
    w = lf.w

    def footprint() -> tuple:
        return (len(w.code), len(w.locals), len(w.taken), len(w.pending), len(lf.bars),
                _ghost_state(w))

    start = footprint()
    rt = lf.exec_block(then_blk, env, [], mask)
    ok = footprint() == start
    re_ = lf.exec_block(else_blk, env, [], mask) if ok and else_blk is not None else None
    if not ok or footprint() != start:
        raise lf.error(o, f"a branch on a data value (not known to pipeproof) whose sides "
                          f"synchronise or access shared memory ({lf.where(o)})")
    if not o.results:
        return None
    rt = rt or [OPAQUE] * len(o.results)
    re_ = re_ or [OPAQUE] * len(o.results)
    return [a if a == b else OPAQUE for a, b in zip(rt, re_)]


def _dynamic_if(lf: Any, o: Op, c: Dyn, then_blk: Any, else_blk: Any, env: dict,
                mask: Any) -> Any:
    """A branch on a run-time value (a try_wait token): a ``Branch`` in the program,
    both sides emitted; they must leave the same values behind."""
    if c.expr is None:
        raise lf.error(o, f"a branch on {c.why or 'a value known only at run time'} "
                          f"({lf.where(o)}): pipeproof follows branches on try_wait "
                          "results and CLC responses only")
    cond = c.expr
    from .sync_ops import retry_of, wait_or_spin

    if retry_of(lf, o, c, then_blk, else_blk, env):
        return [c]  # a retried try_wait: the same token (sync_ops)
    if wait_or_spin(lf, o, c, then_blk, else_blk, env, mask):
        return None
    merge = bool(o.results) and all(t.strip() == "i1" for t in o.result_types)
    if o.results and not lf.w.dyn_depth and not merge:
        # values flow out of it (a pipeline state advanced on one side): each side is a
        # path of its own (Lifter.decide), so what follows sees concrete values
        if lf.decide(cond, o):
            return lf.exec_block(then_blk, env, [], mask)
        if else_blk is not None:
            return lf.exec_block(else_blk, env, [], mask)
        return None
    lf.w.dyn_depth += 1
    before = _ghost_state(lf.w)
    br = lf.emit(None)
    t0 = len(lf.w.code)
    rt = lf.exec_block(then_blk, env, [], mask)
    joined = [lf.new_local("v") for _ in o.results] if merge else []
    _set_locals(lf, o, joined, rt)
    after_then = _ghost_state(lf.w)
    _set_ghost_state(lf.w, before)
    j = lf.emit(None)
    e0 = len(lf.w.code)
    re_ = lf.exec_block(else_blk, env, [], mask) if else_blk else None
    _set_locals(lf, o, joined, re_)
    end = len(lf.w.code)
    lf.w.dyn_depth -= 1
    if _ghost_state(lf.w) != after_then:
        # the sides touch shared memory differently: one bookkeeping after the branch
        # would end writes that one side never began (and hide races), so refuse
        raise lf.error(o, f"the two sides of a run-time branch access shared memory "
                          f"differently ({lf.where(o)}): not supported yet")
    if lf.phase == 2:
        lf.w.code[br] = lf.make(Branch, o, "if (run-time value)", cond=cond, then=t0,
                                orelse=e0)
        lf.w.code[j] = lf.make(Jump, o, "end if", target=end)
    if merge:  # booleans (a retried try_wait's token): the side taken set a local
        return [a if a == b else Dyn(DynExpr("local", (name,)))
                for a, b, name in zip(rt or [], re_ or [], joined)]
    if o.results:
        if rt != re_:
            raise lf.error(o, f"the two sides of a run-time branch leave different values "
                              f"behind ({lf.where(o)})")
        return rt
    return None


def _as_dyn_expr(lf: Any, o: Op, v: Any) -> DynExpr:
    """A boolean the model can hold in a local: a constant or a run-time expression."""
    v = norm(v) if isinstance(v, Lanes) else v
    if isinstance(v, int):
        return DynExpr("const", (int(bool(v)),))
    if isinstance(v, Dyn) and v.expr is not None:
        return v.expr
    raise lf.error(o, f"a run-time branch yields a value the model cannot hold "
                      f"({lf.where(o)})")


def _set_locals(lf: Any, o: Op, names: list[str], vals: Optional[list]) -> None:
    """One side of a run-time branch hands its boolean results to the join."""
    if not names:
        return
    if vals is None or len(vals) != len(names):
        raise lf.error(o, f"a run-time branch side without its results ({lf.where(o)})")
    for name, v in zip(names, vals):
        lf.emit(lf.make(SetLocal, o, f"{name} = branch result", dest=name,
                        value=_as_dyn_expr(lf, o, v)))


_GHOST_SETS = ("held", "written", "dirty", "mma_held", "wgmma_open", "cp_pending")


def _ghost_state(w: Any) -> tuple:
    """A warp's shared-memory bookkeeping (``ghosts.py``), to compare branch sides."""
    return tuple(frozenset(getattr(w, k)) for k in _GHOST_SETS) + (tuple(w.pending_clean),)


def _set_ghost_state(w: Any, st: tuple) -> None:
    for k, v in zip(_GHOST_SETS, st):
        setattr(w, k, set(v))
    w.pending_clean = list(st[-1])


@op("scf.for")
def _for(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    lb, ub, st, *inits = lf.operands(o, env)
    lb, st = lf.concrete(lf.restrict(lb), o), lf.concrete(lf.restrict(st), o)
    if isinstance(ub, Sym) and isinstance(lb, int) and isinstance(st, int) and st > 0:
        return _symbolic_for(lf, o, env, mask, lb, ub, st, inits)
    for x in (lb, ub, st):
        if not isinstance(x, int):
            why = x.why if isinstance(x, Dyn) else "not a constant"
            raise lf.error(o, f"a loop whose trip count is known only at run time ({why}; "
                              f"{lf.where(o)}): compile the entry with static shapes or "
                              "constexpr trip counts" + lf.unvalued_extents_hint())
    if st <= 0:
        raise lf.error(o, f"a loop with step {st} ({lf.where(o)})")
    vals = list(inits)
    blk = o.regions[0][0]
    i = lb
    while i < ub:
        vals = lf.exec_block(blk, env, [i] + vals, mask) or []
        i += st
    return vals if o.results else None


def _symbolic_for(lf: Any, o: Op, env: dict, mask: Any, lb: int, ub: Any, st: int,
                  inits: list) -> Any:
    """A loop whose bound is a symbolic parameter (a run-time trip count): unrolled as
    far as the largest value; each ``i < ub`` that the path's points do not decide
    alike splits it (``Lifter.decide_points``), so the iterations all values share
    are interpreted once."""
    vals = list(inits)
    blk = o.regions[0][0]
    i = lb
    while lf.decide_points(lf.restrict(Sym(tuple(int(i < u) for u in ub.vals))), o,
                           f"{lf.sym_text(ub)} > {i}"):
        vals = lf.exec_block(blk, env, [i] + vals, mask) or []
        i += st
    return vals if o.results else None


@op("scf.while")
def _while(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    vals = lf.operands(o, env)
    before, after = o.regions[0][0], o.regions[1][0]
    from .sync_ops import spin_of, spin_wait

    if spin_of(o, env) is not None:  # while not try_wait(b, p): a blocking wait
        spin_wait(lf, after.ops[0], env, mask)
        return None
    while True:
        mark = (len(lf.w.code), _ghost_state(lf.w))
        c = lf.exec_block(before, env, vals, mask)
        if not c:
            raise lf.error(o, f"a while loop without a condition ({lf.where(o)})")
        cond, rest = c[0], c[1:]
        if isinstance(cond, Lanes):
            cond = norm(cond)
        if isinstance(cond, Sym):
            cond = int(lf.decide_points(lf.restrict(cond), o))
        if isinstance(cond, Dyn) and cond.expr is not None and _spins(o) and \
                (len(lf.w.code), _ghost_state(lf.w)) == mark:
            return _program_loop(lf, o, env, mask, vals)
        if isinstance(cond, Dyn) and cond.expr is not None:
            cond = int(lf.decide(cond.expr, o))  # e.g. while the CLC response is valid
        if not isinstance(cond, int):
            why = cond.why if isinstance(cond, Dyn) else "a value pipeproof cannot evaluate"
            raise lf.error(o, f"a while loop whose exit depends on {why} "
                              f"({lf.where(o)}): not supported yet")
        if not cond:
            return rest if o.results else None
        vals = lf.exec_block(after, env, rest, mask) or []


def _spins(o: Op) -> bool:
    """A loop that only carries booleans (a spin on a try_wait token): it can stay a
    loop of the warp's program, its state in locals."""
    types = [t.strip() for t in o.result_types] + [t.strip() for t in o.operand_types]
    return all(t == "i1" for t in types)


def _program_loop(lf: Any, o: Op, env: dict, mask: Any, vals: list) -> Any:
    """A ``while`` whose condition is a run-time value and whose carried values are
    booleans (``while not try_wait(...)``): a loop of the warp's program.  The carried
    values live in locals; the condition region is interpreted once over them, the body
    once, then a ``Jump`` back: ``head: <before>; Branch(cond, body, exit); body: <after>;
    locals = yields; Jump head``.  (The ``before`` region just interpreted with the
    concrete values emitted nothing, so starting over at ``head`` repeats nothing.)  The
    body must leave shared-memory bookkeeping as it found it, as a branch's sides must."""
    before, after = o.regions[0][0], o.regions[1][0]
    w = lf.w
    names = [lf.new_local("w") for _ in vals]
    _set_locals(lf, o, names, vals)
    w.dyn_depth += 1
    ghosts = _ghost_state(w)
    head = len(w.code)
    c = lf.exec_block(before, env, [Dyn(DynExpr("local", (n,))) for n in names], mask)
    cond, rest = norm(c[0]) if isinstance(c[0], Lanes) else c[0], c[1:]
    if not (isinstance(cond, Dyn) and cond.expr is not None):
        raise lf.error(o, f"a while loop whose condition pipeproof cannot follow "
                          f"({lf.where(o)})")
    br = lf.emit(None)
    body = len(w.code)
    ys = lf.exec_block(after, env, rest, mask) or []
    _set_locals(lf, o, names, ys)
    j = lf.emit(None)
    end = len(w.code)
    w.dyn_depth -= 1
    if _ghost_state(w) != ghosts:
        raise lf.error(o, f"a run-time loop that accesses shared memory ({lf.where(o)}): "
                          "not supported yet")
    if lf.phase == 2:
        w.code[br] = lf.make(Branch, o, "while (run-time value)", cond=cond.expr,
                             then=body, orelse=end)
        w.code[j] = lf.make(Jump, o, "loop", target=head)
    return rest if o.results else None


@op("vector.extract", "vector.extractelement", "vector.broadcast", "vector.splat")
def _vector(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """One value moved in or out of a vector: a run-time value (a CLC response) passes."""
    v = lf.val(env, o.operands[0], o) if o.operands else OPAQUE
    return v if isinstance(v, (Dyn, int)) else OPAQUE


# --------------------------------------------------------------------------- cute values

@op("cute.memref.alloca")
def _alloca(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    t = o.result_types[0]
    eb = element_bytes(t)
    if "smem" not in t:  # registers: each alloca its own (negative) id
        rid = lf.allocs.setdefault(("rmem", o.results[0]), -2 - len(lf.allocs))
        return View(Ptr("rmem", rid, 0), t, eb)
    key = o.results[0]
    if key not in lf.allocs:
        aid = len(lf.allocs)
        fields = []
        sf = o.attrs.get("smem.struct_fields")
        if sf:
            for f in re.findall(r'"([^"]+)"', sf):
                nm, sz, off = f.rsplit(":", 2)
                fields.append((nm, int(sz), int(off)))
        lf.allocs[key] = aid
        lf.alloc_fields[aid] = (lf.assigned_name(o) or f"smem{aid}", fields)
    return View(Ptr("smem", lf.allocs[key], 0, eb), t, eb)


@op("cute_nvgpu.arch.get_dyn_smem")
def _dyn_smem(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    key = "dyn_smem"
    if key not in lf.allocs:
        lf.allocs[key] = len(lf.allocs)
        lf.alloc_fields[lf.allocs[key]] = ("smem", [])
    return Ptr("smem", lf.allocs[key], 0, element_bytes(o.result_types[0]))


@op("cute.get_iter")
def _get_iter(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    (v,) = lf.operands(o, env)
    if coords.is_coord(v):
        return v  # an arithmetic-tuple iterator: the first element's coordinate
    if isinstance(v, View) and isinstance(v.ptr, Ptr):
        return v.ptr
    return OPAQUE


@op("cute.make_int_tuple", "cute.make_coord", "cute.make_shape", "cute.make_stride")
@per_lane
def _make_tuple(lf: Any, o: Op, vals: list) -> Any:
    q = quoted(o.result_types[0])
    if not q:
        return OPAQUE
    try:
        t = parse_tuple(q[0])
    except TupleSyntax:
        return OPAQUE
    if "E" in str(t) or any(not isinstance(v, int) for v in vals):
        return OPAQUE
    return fill(t, list(vals))


@op("cute.get_leaves", "cute.get_scalars", "cute.to_int_tuple")
@per_lane
def _leaves(lf: Any, o: Op, vals: list) -> Any:
    v = vals[0] if vals else OPAQUE
    if o.name == "cute.to_int_tuple":
        return v
    if isinstance(v, tuple):
        flat = [x for x in flatten(v) if x is not None]
        if len(o.results) > 1:
            return (flat + [OPAQUE] * len(o.results))[:len(o.results)]
        return flat[0] if flat else OPAQUE
    if isinstance(v, int):
        return [v] + [OPAQUE] * (len(o.results) - 1) if len(o.results) > 1 else v
    return [OPAQUE] * len(o.results) if len(o.results) > 1 else OPAQUE


def _offset(p: Ptr, elems: int) -> Ptr:
    return replace(p, off=p.off + elems * p.ebytes)


@op("cute.add_offset")
def _add_offset(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    p, off = lf.operands(o, env)
    if isinstance(off, tuple) and len(off) == 1:
        off = off[0]
    if isinstance(p, Ptr) and isinstance(off, int):
        return _offset(p, off)
    if isinstance(p, Ptr) and isinstance(off, Lanes):
        return norm(Lanes(_offset(p, x) if isinstance(x, int) else OPAQUE for x in off))
    return OPAQUE


@op("cute.recast_iter", "cute.derefine", "builtin.unrealized_conversion_cast",
    "cute.assume", "cute.ptrtoint", "cute.inttoptr")
def _recast(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    vals = lf.operands(o, env)
    p = vals[0] if vals else OPAQUE
    t = o.result_types[0] if o.result_types else ""
    if isinstance(p, Ptr):
        eb = element_bytes(t) if t.startswith("!cute.ptr") else p.ebytes
        return replace(p, ebytes=eb)
    if isinstance(p, Lanes):
        return p
    if isinstance(p, View):
        if o.name == "cute.recast_iter":
            return OPAQUE
        return View(p.ptr, t, element_bytes(t) if "memref" in t else p.ebytes)
    if o.name in ("builtin.unrealized_conversion_cast", "cute.derefine", "cute.assume"):
        return p
    return OPAQUE


@op("cute.make_view")
def _make_view(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    p = lf.val(env, o.operands[0], o)
    t = o.result_types[0]
    return View(p, t, element_bytes(t))


@op("cute.slice")
def _slice(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    v, c = lf.operands(o, env)[:2]
    if isinstance(v, Shaped):
        return shapes.slice_(o, [v, c])
    if coords.is_coord(v):
        return coords.slice_(lf, o, env)
    t = o.result_types[0]
    if not isinstance(v, View) or not isinstance(v.ptr, Ptr):
        return OPAQUE
    lay = layout_of(o.operand_types[0])
    if lay is None or not isinstance(c, (tuple, int)):
        return View(v.ptr, t, v.ebytes)
    try:
        off = crd2idx(c, lay[0], lay[1])
    except (TypeError, ValueError):
        off = None
    p = v.ptr
    span = p.span
    if span is not None and span[2]:
        # the warp's region of the partitioned tensor, sliced by the same coordinate
        ext = _span_slice(c, layout_of(span[2]), lay)
        span = (span[0] + ext[0] * v.ebytes, span[0] + (ext[0] + ext[1]) * v.ebytes, "") \
            if ext else (-1, -1, "")
    elif span is not None:
        span = (-1, -1, "")  # sliced twice: not followed
    if not isinstance(off, int):
        return View(replace(p, span=(-1, -1, "")) if span is not None else p, t, v.ebytes)
    return View(replace(p, off=p.off + off * v.ebytes, span=span), t, v.ebytes)


@op("cute.get_flat_coord", "cute.get_hier_coord")
@per_lane
def _flat_coord(lf: Any, o: Op, vals: list) -> Any:
    idx = vals[0]
    lay = layout_of(o.operand_types[1]) if len(o.operand_types) > 1 else None
    if not isinstance(idx, int) or lay is None:
        return OPAQUE
    if not all(isinstance(x, int) for x in flatten(lay[0]) + flatten(lay[1])):
        return OPAQUE
    return flat_coord(idx, lay[0], lay[1], hier=o.name == "cute.get_hier_coord")


@op("cute.crd2idx")
@per_lane
def _crd2idx(lf: Any, o: Op, vals: list) -> Any:
    c = vals[0]
    lay = layout_of(o.operand_types[1]) if len(o.operand_types) > 1 else None
    if lay is None or not isinstance(c, (int, tuple)):
        return OPAQUE
    try:
        r = crd2idx(c, lay[0], lay[1])
    except (TypeError, ValueError):
        return OPAQUE
    return r if isinstance(r, int) else OPAQUE


@op("cute.fast_divmod.compute")
def _fast_divmod(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    a, d = lf.operands(o, env)[:2]
    if isinstance(a, int) and isinstance(d, int) and d:
        return [a // d, a % d]
    return [OPAQUE, OPAQUE]


@op("cute.fast_divmod.create_divisor")
def _divisor(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    return lf.operands(o, env)[0]


@op("cute.size")
def _size(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    q = quoted(o.result_types[0])
    if q and re.fullmatch(r"-?\d+", q[0]):
        return int(q[0])
    vals = lf.operands(o, env)
    modes = [int(x) for x in re.findall(r"-?\d+", o.attrs.get("mode", "").partition(":")[2])]
    v = vals[0] if vals else OPAQUE
    if isinstance(v, Shaped):
        return shapes.size_of(o, v, modes)
    if isinstance(v, View) or not isinstance(v, (tuple, int)):
        lay = layout_of(o.operand_types[0]) if o.operand_types else None
        if lay is None:
            return OPAQUE
        v = lay[0]
    try:
        for m in modes:
            v = v[m]
    except (TypeError, IndexError):
        return OPAQUE
    s = size(v)
    return s if isinstance(s, int) and "?" not in str(v) else OPAQUE


@op("cute.make_layout")
def _make_layout(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """A layout with dynamic leaves in its shape (``shapes.make_layout``); otherwise
    opaque, as before this handler existed (a static layout is read from types)."""
    vals = lf.operands(o, env)
    q = quoted(o.result_types[0]) if o.result_types else []
    if q and "?" in q[-1] and vals and isinstance(vals[0], (tuple, int)):
        return shapes.make_layout(o, vals)
    return OPAQUE


@op("cute.make_tile")
def _make_tile(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """In a kernel with dynamic extents, a static tile as the tuple of its modes'
    sizes (a divisor of ``cute.ceil_div``: a tile scheduler's tile count);
    elsewhere opaque, as before this handler existed."""
    return shapes.tile_sizes(o) if lf.dynamic_extents else OPAQUE


@op("cute.get_shape", "cute.get_stride", "cute.get_layout")
def _layout_part(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """A tensor's shape, stride or layout where it has dynamic extents (``Shaped``,
    ``shapes.py``); otherwise opaque, as before this handler existed."""
    vals = lf.operands(o, env)
    if vals and isinstance(vals[0], Shaped):
        return shapes.part(o, vals[0])
    return OPAQUE


@op("cute.get")
def _get(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    vals = lf.operands(o, env)
    m = re.search(r"(\d+)", o.attrs.get("mode", ""))
    if vals and isinstance(vals[0], tuple) and m and int(m.group(1)) < len(vals[0]):
        return vals[0][int(m.group(1))]
    return OPAQUE


@op("cute.tuple_add", "cute.tuple_mul", "cute.tuple_sub", "cute.tuple_div", "cute.ceil_div")
def _tuple_arith(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    vals = lf.operands(o, env)
    q = quoted(o.result_types[0])
    if q and re.fullmatch(r"-?\d+", q[0]):
        return int(q[0])
    f = {"cute.tuple_add": lambda a, b: a + b, "cute.tuple_mul": lambda a, b: a * b,
         "cute.tuple_sub": lambda a, b: a - b, "cute.tuple_div": lambda a, b: a // b,
         "cute.ceil_div": lambda a, b: -((-a) // b)}[o.name]

    def go(a: Any, b: Any) -> Any:
        if isinstance(a, tuple) and isinstance(b, tuple):
            if len(b) > len(a):
                raise TypeError
            # a tile of fewer modes (ceil_div by a tile): the others are left whole
            return tuple(go(x, y) for x, y in zip(a, b)) + a[len(b):]
        if isinstance(a, tuple):
            return tuple(go(x, b) for x in a)
        if isinstance(b, tuple) and len(b) == 1:
            return go(a, b[0])  # an integer by a tile of one mode
        if isinstance(a, int) and isinstance(b, int):
            return f(a, b)
        raise TypeError
    try:
        return go(vals[0], vals[1])
    except (TypeError, IndexError, ZeroDivisionError):
        return OPAQUE


def _span_slice(c: Any, orig: Any, part: Any) -> Any:
    """The part of the partitioned tensor's whole (``orig``) that a coordinate of the
    partition (``part``) selects.  A partition has the original modes at its end and
    thread/value modes before them; a coordinate entry is carried over to the original
    mode in the same position from the end only where the two modes have the same
    size (a stage index); a ``_`` takes the original mode whole.  None: not followed."""
    if orig is None or part is None or not isinstance(c, tuple) or \
            not isinstance(orig[0], tuple) or not isinstance(part[0], tuple):
        return None
    oshape, ostride = orig
    pshape = part[0]
    if len(c) != len(pshape) or len(c) < len(oshape):
        return None
    k = len(oshape)
    cc = []
    for i in range(k):
        ci = c[len(c) - k + i]
        pi = pshape[len(c) - k + i]
        if ci is None:
            cc.append(None)
        elif isinstance(ci, int) and size(pi) == size(oshape[i]):
            cc.append(ci)
        else:
            return None
    # modes of the partition before those carried over must be taken whole
    if any(x is not None and x != 0 for x in c[:len(c) - k]):
        if not all(isinstance(x, int) for x in c[:len(c) - k]):
            return None
    return slice_extent(tuple(cc), oshape, ostride)


@op("cute.tiled.copy.partition_S", "cute.tiled.copy.partition_D",
    "cute.tiled.mma.partition", "cute.local_partition")
def _partition(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    """A per-thread partition of a tensor: the pointer stands for lane 0's part; the
    warp as a whole covers the tensor (``span``), which later slices narrow down."""
    vals = lf.operands(o, env)
    if o.name.startswith("cute.tiled.copy.") and len(vals) > 1 and coords.is_coord(vals[1]):
        return coords.partition(lf, o, env)
    src = next((v for v in vals if isinstance(v, View)), None)
    t = o.result_types[0]
    if src is None or not isinstance(src.ptr, Ptr):
        return OPAQUE
    from .ghosts import cosize_bytes

    n = cosize_bytes(src)
    p = src.ptr
    span = (p.off, p.off + n, src.type) if n is not None and p.span is None else (-1, -1, "")
    return View(replace(p, span=span), t, element_bytes(t) if "memref" in t else src.ebytes)


# views of tensors whose layout changes but whose base pointer does not
@op("cute.group_modes", "cute.append_to_rank", "cute.mma.make_fragment",
    "cute.tiled.mma.partition", "cute.coalesce", "cute.flat_divide", "cute.zipped_divide",
    "cute.tiled_divide", "cute.logical_divide", "cute.composition",
    "cute.tiled.copy.retile", "cute.select", "cute.dice",
    "cute.make_fragment_like", "cute.local_tile",
    "cute.tiled.mma.partition_shape", "cute.flat_product", "cute.logical_product")
def _view_keep(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    vals = lf.operands(o, env)
    if o.name == "cute.local_tile" and vals and coords.is_coord(vals[0]):
        return coords.local_tile(lf, o, env)
    if o.name == "cute.local_tile" and vals and isinstance(vals[0], Shaped):
        return shapes.local_tile(o, vals)
    if o.name == "cute.zipped_divide" and vals and isinstance(vals[0], Shaped):
        return shapes.zipped_divide(o, vals)
    src = next((v for v in vals if isinstance(v, View)), None)
    n = len(o.results)
    if src is None:
        return [OPAQUE] * n if n > 1 else OPAQUE
    t = o.result_types[0]
    eb = 16 if "smem_desc" in t else element_bytes(t) if "memref" in t else src.ebytes
    out = View(src.ptr, t, eb)
    return [out] * n if n > 1 else out


# loads from memory are run-time values; stores and data movement through registers
# do not synchronise (their effects on stage buffers are the ghost effects' business)
@op("llvm.load")
def _load(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    src = lf.val(env, o.operands[0], o)
    p = src.ptr if isinstance(src, View) else src
    space = p.space if isinstance(p, Ptr) else "global or unknown"
    if space == "rmem":
        return OPAQUE
    return Dyn(None, f"a value loaded from {space} memory")


@op("cute_nvgpu.atom.make_exec_tma")
def _make_exec_tma(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    t = o.result_types[0]
    kind = "tma_load" if "tma_load" in t else "tma_store" if "tma_store" in t else "other"
    bits = re.search(r"copy_bits = (\d+)", t)
    ncta = re.search(r"num_cta = (\d+)", t)
    return Atom(kind, int(bits.group(1)) if bits else 0, int(ncta.group(1)) if ncta else 1,
                lf.atom_split.get(o.operands[0], 1) if o.operands else 1)


@op("cute_nvgpu.atom.tma_partition")
def _tma_partition(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    lay = layout_of(o.operand_types[2]) if len(o.operand_types) > 2 else None
    if o.operands:
        lf.atom_split[o.operands[0]] = size(lay[0]) if lay and isinstance(size(lay[0]), int) else 1
    smem = lf.val(env, o.operands[3], o) if len(o.operands) > 3 else None
    out_s = View(smem.ptr, o.result_types[0], element_bytes(o.result_types[0])) \
        if isinstance(smem, View) else OPAQUE
    return [out_s] + [OPAQUE] * (len(o.results) - 1)


@op("cute_nvgpu.atom.set_value")
def _set_value(lf: Any, o: Op, env: dict, mask: Any) -> Any:
    a, v = lf.operands(o, env)[:2]
    if not isinstance(a, Atom):
        return OPAQUE
    f = re.search(r"<(\w+)>", o.attrs.get("field", ""))
    fld = f.group(1) if f else ""
    if fld == "tma_bar":
        return Atom(a.kind, a.bits, a.num_cta, a.split, bar=v, mcast=a.mcast)
    if fld == "mcast_mask":
        return Atom(a.kind, a.bits, a.num_cta, a.split, bar=a.bar, mcast=v)
    return a
