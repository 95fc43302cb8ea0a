"""Promela for SPIN from pipeproof's transition templates (bench only: the SPIN yardstick).

SPIN is the explicit-state checker a user would reach for; ``bench_spin.py`` times it
against pipeproof on the same models.  To compare like with like, the Promela is not
written by hand: it is printed from the transition templates of the kernel's one
semantics (``checker/symbolic.py``'s ``Encoding``, the templates the native engine
compiles to C, ``checker/native/ccode.py``), so SPIN explores exactly the state space
pipeproof's explicit engine explores without reductions (same variables, same initial
values, same transitions).  There is no second rendering of the PTX ISA rules here:
the mbarrier, TMA, tcgen05 and named-barrier rules (``model/mbarrier.py``,
``model/system.py``; PTX ISA sections "mbarrier", "cp.async.bulk", "tcgen05.commit",
"bar.sync") reach Promela as the z3 terms they produce, transcribed node for node.

The model:

* one global variable per state key (``short`` for keys of up to 16 bits, ``int``
  otherwise), initialised to the key's initial value;
* one ``active proctype`` per warp and one (``Env``) for the asynchronous units (TMA/CLC
  deliveries, tcgen05 commits, cp.async and bulk-store queues); each is a loop of
  ``d_step { guard -> checks; updates }``, one option per transition template, so a
  transition is one atomic SPIN step and the loop head is the only control state;
* a check that fails is ``assert(!(cond) || p_<property>)`` (``p_<property>`` is a
  hidden constant 0, there so that SPIN's message names the property); a value that
  leaves the encoding's ranges is ``assert(!(ovf) || encoding_overflow)``: the model is
  too narrow, not a verdict;
* deadlock: a ``Watch`` process asserts, on ``timeout`` (no statement of any process
  executable), that every warp has exited -- the explicit engine's definition (no
  successor and some warp not exited);
* every loop head carries an ``end`` label, so SPIN's own invalid-end-state check does
  not fire on top of the watcher's assertion.

Bit-vector terms (width ``w`` at most 30) are held as their unsigned value in
``[0, 2^w)`` in a Promela ``int``; keys are stored sign-extended, as in the native
engine.  Unsupported terms raise ``Unsupported``: no guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import z3

from pipeproof.checker.concrete import ConcreteRunner
from pipeproof.checker.native.build import core_source, loaded
from pipeproof.checker.native.ccode import TermPrinter, Unsupported, generate
from pipeproof.checker.native.search import ST_DONE, ST_OVERFLOW, _path, _Shape
from pipeproof.checker.properties import PRIORITY
from pipeproof.checker.symbolic import Encoding
from pipeproof.model.properties import ALL_PROPERTIES
from pipeproof.model.system import System

_K = z3
#: widest bit-vector transcribed (its unsigned value fits a Promela ``int``)
MAX_WIDTH = 30
DONE_PC = -1


def _m(w: int) -> int:
    return (1 << w) - 1


def _sx(a: str, w: int) -> str:
    """The signed value of ``a`` (unsigned representation, width ``w``)."""
    s = 1 << (w - 1)
    if re.fullmatch(r"\d+", a):
        return str((int(a) ^ s) - s)
    return f"(({a} ^ {s}) - {s})"


def prop_var(prop: str) -> str:
    return "p_" + re.sub(r"[^A-Za-z0-9]", "_", prop)


class _Body(TermPrinter):
    """One d_step's statements: shared z3 nodes become hidden temporaries (the DAG walk
    and the Boolean operators are ``TermPrinter``'s, shared with the native engine)."""

    ITE = "({} -> {} : {})"
    _sx = staticmethod(_sx)

    def __init__(self, key_var: dict[int, str], width_of_var: dict[int, int],
                 inline: bool):
        super().__init__()
        self.key_var = key_var
        self.width_of_var = width_of_var
        self.inline = inline  # the guard: one expression, no temporaries

    def _tmp(self, code: str) -> str:
        if self.inline or len(code) < 12:
            return code
        name = f"t{self.n}"
        self.n += 1
        self.lines.append(f"{name} = {code}")
        return name

    def _node(self, t: Any, a: list[str]) -> str:
        if not z3.is_app(t):
            raise Unsupported(f"a z3 term that is not an application: {t}")
        k = t.decl().kind()
        if z3.is_bool(t):
            return self._tmp(self._bool(t, k, a))
        if not z3.is_bv(t):
            raise Unsupported(f"a z3 term of sort {t.sort()}")
        w = t.size()
        if w > MAX_WIDTH:
            raise Unsupported(f"a {w}-bit term (at most {MAX_WIDTH} are transcribed)")
        if k == _K.Z3_OP_BNUM:
            return str(t.as_long())
        if k == _K.Z3_OP_UNINTERPRETED and not a:
            v = self.key_var.get(t.get_id())
            if v is None:
                raise Unsupported(f"a free constant that is no state key: {t}")
            return f"({v} & {_m(w)})"
        return self._tmp(self._bv(t, k, a, w))

    def _bv(self, t: Any, k: int, a: list[str], w: int) -> str:
        m = _m(w)
        if k == _K.Z3_OP_ITE:
            return self.ITE.format(*a)
        if k == _K.Z3_OP_BADD:
            return "((" + " + ".join(a) + f") & {m})"
        if k == _K.Z3_OP_BSUB:
            return f"(({a[0]} - {a[1]}) & {m})"
        if k == _K.Z3_OP_BMUL:
            if len(a) != 2:
                raise Unsupported(f"a product of {len(a)} terms: {t}")
            if 2 * w <= MAX_WIDTH:
                return f"(({a[0]} * {a[1]}) & {m})"
            # by a constant c: c - 2^w when that is smaller (two's complement wraps alike)
            for i in (0, 1):
                if z3.is_bv_value(t.arg(i)):
                    c = t.arg(i).as_long()
                    c = c - (1 << w) if c >= 1 << (w - 1) else c
                    if abs(c) * (1 << w) < (1 << 31):
                        return f"(({c} * {a[1 - i]}) & {m})"
            raise Unsupported(f"a {w}-bit product: {t}")
        if k == _K.Z3_OP_BNEG:
            return f"((0 - {a[0]}) & {m})"
        if k == _K.Z3_OP_BAND:
            return "(" + " & ".join(a) + ")"
        if k == _K.Z3_OP_BOR:
            return "(" + " | ".join(a) + ")"
        if k == _K.Z3_OP_BXOR:
            return "(" + " ^ ".join(a) + ")"
        if k == _K.Z3_OP_BNOT:
            return f"((~{a[0]}) & {m})"
        if k == _K.Z3_OP_CONCAT:
            out, shift = [], 0
            for i in range(len(a) - 1, -1, -1):
                out.append(f"({a[i]} << {shift})" if shift else a[i])
                shift += t.arg(i).size()
            return "(" + " | ".join(out) + ")"
        if k == _K.Z3_OP_EXTRACT:
            hi, lo = t.params()
            return f"(({a[0]} >> {lo}) & {_m(hi - lo + 1)})"
        if k == _K.Z3_OP_SIGN_EXT:
            return f"({_sx(a[0], t.arg(0).size())} & {m})"
        if k == _K.Z3_OP_ZERO_EXT:
            return a[0]
        if k in (_K.Z3_OP_BUDIV, _K.Z3_OP_BUDIV_I, _K.Z3_OP_BUREM, _K.Z3_OP_BUREM_I):
            d = t.arg(1)
            if not (z3.is_bv_value(d) and d.as_long() != 0):
                raise Unsupported(f"division by a non-constant or zero divisor: {t}")
            op = "/" if k in (_K.Z3_OP_BUDIV, _K.Z3_OP_BUDIV_I) else "%"
            return f"({a[0]} {op} {a[1]})"
        if k in (_K.Z3_OP_BSHL, _K.Z3_OP_BLSHR):
            s = t.arg(1)
            if not z3.is_bv_value(s):
                raise Unsupported(f"a shift by a non-constant amount: {t}")
            n = s.as_long()
            if n >= w:
                return "0"
            return f"(({a[0]} << {n}) & {m})" if k == _K.Z3_OP_BSHL else f"({a[0]} >> {n})"
        raise Unsupported(f"bit-vector operator {t.decl()}")


@dataclass(frozen=True)
class PromelaModel:
    """A generated model and what the bench needs to read SPIN's answers."""

    source: str
    nkeys: int
    transitions: int
    agents: int
    acyclic: bool


@dataclass(frozen=True)
class Reference:
    """The native search that fixed the encoding (no reductions: SPIN's state space)."""

    states: int
    transitions: int
    complete: bool  # searched to the end (no violation, limit or timeout stopped it)


def final_encoding(system: System, max_states: int = 1_000_000,
                   timeout: float = 600.0) -> tuple[Encoding, Reference]:
    """The native engine's encoding once its value ranges and queue capacities hold
    every reachable state (``checker/native/search.py``: sample, search, widen on an
    overflow, search again), every sampled range first widened to 16 bits.  A search
    stopped by ``max_states`` leaves the ranges guessed so far; the Promela then still
    asserts ``encoding_overflow``."""
    shape = _Shape(system, [])
    # keys are Promela shorts whatever their range: give every sampled range all 16 bits,
    # and a barrier's tx-count its full PTX range, [-(2^20 - 1), 2^20 - 1] (Promela ints)
    # (PTX ISA, "mbarrier": tx-count): a breadth-first sample does not reach the deep
    # states where a large expect_tx is pending, SPIN's depth-first search does.  The
    # overflow assertion stays, for values beyond.
    for name, (lo, hi) in list(shape.ranges.items()):
        if name.endswith(".tx"):
            shape.ranges[name] = (-(1 << 20), (1 << 20) - 1)
        elif -(1 << 15) <= lo and hi < (1 << 15):
            shape.ranges[name] = (-(1 << 15), (1 << 15) - 1)
    for _ in range(13):
        enc = shape.encoding()
        prog = generate(enc, core_source(), [])
        with loaded(prog.source) as (_ffi, lib):
            st = lib.pp_search(max_states, timeout, 0, PRIORITY.get("deadlock", 99))
            if st != ST_OVERFLOW:
                ref = Reference(lib.pp_nstates(), lib.pp_ntrans(), st == ST_DONE)
                lib.pp_free()
                return enc, ref
            steps = _path(lib, prog, lib.pp_ovf_state()) + [prog.steps[lib.pp_ovf_tid()]]
            lib.pp_free()
        states, _ = ConcreteRunner(system).run(steps)
        if not shape.widen(enc, states[-1]):
            break
    raise Unsupported("the encoding overflowed and could not be widened")


def _ctype(lo: int, hi: int) -> str:
    return "short" if -(1 << 15) <= lo and hi < (1 << 15) else "int"


def promela(enc: Encoding, title: str = "") -> PromelaModel:
    """The Promela text of ``enc`` (module docstring)."""
    key_var = {x.get_id(): f"k{i}" for i, x in enumerate(enc.X)}
    width_of_var = {x.get_id(): enc.width[i] for i, x in enumerate(enc.X)}
    for w in enc.width:
        if w > MAX_WIDTH:
            raise Unsupported(f"a {w}-bit state key (at most {MAX_WIDTH} are transcribed)")
    sysm = enc.sys
    pc_keys = [enc.key_of_slot[ag.pc] for ag in sysm.agents]
    out = [f"/* {title} -- generated by bench/spin_promela.py from pipeproof's transition",
           "   templates (checker/symbolic.py); do not edit. */", ""]
    out += [f"hidden byte {prop_var(p)};" for p in ALL_PROPERTIES]
    out += ["hidden byte encoding_overflow;", ""]
    for i in range(enc.nkeys):
        lo, hi = enc.key_range[i]
        out.append(f"{_ctype(lo, hi)} k{i} = {enc.init_values[i]};  /* {enc.key_names[i]} */")
    bodies: dict[Any, list[str]] = {}
    ntemps = 0
    for i, tr in enumerate(enc.transitions):
        g = _Body(key_var, width_of_var, inline=True).expr(tr.guard)
        b = _Body(key_var, width_of_var, inline=False)
        stmts: list[str] = []
        o = b.expr(tr.ovf)
        stmts += b.lines
        b.lines = []
        if o != "0":
            stmts.append(f"assert(!({o}) || encoding_overflow)")
        for cond, prop in tr.checks:
            c = b.expr(cond)
            stmts += b.lines
            b.lines = []
            if c != "0":
                stmts.append(f"assert(!({c}) || {prop_var(prop)})")
        news = []
        for k, t in sorted(tr.updates.items()):
            e = b.expr(t)
            news.append((k, _sx(e, enc.width[k]) if enc.width[k] > 0 else e))
        stmts += b.lines
        # all new values from the old state first, then the assignments
        for j, (k, e) in enumerate(news):
            stmts.append(f"n{j} = {e}")
        stmts += [f"k{k} = n{j}" for j, (k, _e) in enumerate(news)]
        ntemps = max(ntemps, b.n, len(news))
        body = ";\n      ".join([f"({g}) ->"] + stmts) if stmts else f"({g})"
        body = body.replace("->;", "->")
        owner = tr.agent if tr.agent is not None else "env"
        bodies.setdefault(owner, []).append(f"  :: d_step {{ /* T{i} {tr.step} */\n      "
                                            f"{body} }}")
    if ntemps:
        out.append("hidden int " + ", ".join([f"t{i}" for i in range(ntemps)]
                                             + [f"n{i}" for i in range(ntemps)]) + ";")
    out.append("")
    for ag in sysm.agents:
        out.append(f"active proctype W{ag.index}() {{  /* {ag.program.name} {ag.program.role} */")
        out.append("end: do")
        out += bodies.get(ag.index, ["  :: false"])
        out += ["  od", "}", ""]
    if "env" in bodies:
        out += ["active proctype Env() {  /* TMA/CLC deliveries, tcgen05, cp.async, bulk */",
                "end: do", *bodies["env"], "  od", "}", ""]
    done = " && ".join(f"k{k} == {DONE_PC}" for k in pc_keys)
    out += ["hidden byte deadlock;",
            "active proctype Watch() {  /* no step anywhere and some warp not exited */",
            f"end: do :: d_step {{ timeout; assert(({done}) || deadlock) }} od", "}", ""]
    src = "\n".join(out).replace(";\n      ;", ";") + "\n"
    return PromelaModel(src.replace("-> ;", "->"), enc.nkeys, len(enc.transitions),
                        len(sysm.agents), enc.acyclic)
