"""The step-indexed unrolling of the symbolic transition relation on one z3 solver.

The relation is ``checker/symbolic.py``'s (the model's transition functions run over
z3 terms); ``Unrolling`` makes one copy per level, a step choosing an actor.  The BMC
engine (``checker/bmc.py``) asks its queries on it, the chains
(``checker/chain.py``) refine it, the certificate and safe steps take its templates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import z3

from .symbolic import Encoding, FreeVars, Substitution, Transition


class _Groups:
    """Terms with the disjunction of the conditions under which each is selected."""

    def __init__(self) -> None:
        self.terms: dict[int, Any] = {}
        self.conds: dict[int, list[Any]] = {}

    def add(self, term: Any, cond: Any) -> None:
        i = term.get_id()
        if i not in self.terms:
            self.terms[i] = term
            self.conds[i] = []
        self.conds[i].append(cond)

    def items(self) -> list[tuple[Any, Any]]:
        return [(self.terms[i], z3.Or(*cs) if len(cs) > 1 else cs[0])
                for i, cs in self.conds.items()]


def selected_steps(enc: Encoding, selected: list[tuple[Transition, Any]]
                   ) -> tuple[list[Any], dict[int, Any]]:
    """Templates of "the selected transition takes a good step": for every ``(t, cond)``,
    ``cond`` implies that ``t`` is enabled and neither violates nor overflows, and each key
    some ``t`` updates takes ``t``'s new value under ``cond`` (else keeps its value).
    Transitions of the unrolled programs repeat the same effect at many program counters;
    z3 terms are hash-consed, so each distinct term is guarded once by the disjunction of
    the conditions selecting it."""
    ok_g = _Groups()
    for t, c in selected:
        ok_g.add(t.good(), c)
    good = [z3.Implies(cs, term) for term, cs in ok_g.items() if not z3.is_true(term)]
    nxt: dict[int, Any] = {}
    for k in sorted({k for t, _ in selected for k in t.updates}):
        g = _Groups()
        for t, c in selected:
            if k in t.updates:
                g.add(t.updates[k], c)
        val: Any = enc.X[k]
        for term, cs in reversed(g.items()):
            val = z3.If(cs, term, val)
        nxt[k] = val
    return good, nxt


@dataclass(frozen=True)
class ActorRelation:
    """Some steps of one actor as templates over ``Encoding.X`` and ``Unrolling.CH``
    (no action variable): a good (enabled, non-violating) step, the next key values,
    enabled, violating or leaving the encoding."""

    good: Any
    nxt: dict
    en: Any
    bad: Any


class Unrolling:
    """Step-indexed copies of the template relation on one solver.

    A step chooses an *actor* -- a warp or a static environment item -- with the
    variable ``act(k)`` (and the outcome bit ``choice(k)`` for CLC queries); the warp's
    program counter then selects its transition, so the solver never guesses one.
    ``state(k)`` are the key values after ``k`` steps (constants for ``k = 0``, fresh
    variables after, shared across steps for keys no transition changes).  Queries
    about a violating step from level ``k`` use separate action variables
    (``bad_act(k)``), so the good step ``k -> k + 1`` can be asserted first."""

    def __init__(self, enc: Encoding, solver: z3.Solver, inv: Any = None):
        self.enc = enc
        self.solver = solver
        #: a proven invariant over ``enc.X`` (``checker/invariants.py``), asserted of
        #: every level's state
        self.inv = z3.BoolVal(True) if inv is None else inv
        #: when set, building a level past this ``time.perf_counter()`` raises
        #: ``Timeout`` (a chain level of a large encoding takes tens of seconds to build)
        self.deadline: Optional[float] = None
        trs = enc.transitions
        nag = len(enc.sys.agents)
        self.nag = nag
        self.actors: list[Any] = list(range(nag)) + list(enc.env_items)
        nact = len(self.actors)
        self.act_width = max(1, (max(nact, 2) - 1).bit_length())
        self.ACT = z3.BitVec("act", self.act_width)
        self.CH = z3.Bool("choice")
        env_actor = {it: nag + i for i, it in enumerate(enc.env_items)}
        self.actor_of: list[int] = []
        conds = []
        multi = {(t.agent, t.pc) for t in trs if t.agent is not None and t.step[2] > 0}
        for t in trs:
            if t.agent is not None:
                a = t.agent
                pck = enc.key_of_slot[enc.sys.agents[a].pc]
                c = z3.And(self.is_act(a), enc.X[pck] == z3.BitVecVal(t.pc, enc.width[pck]))
                if (a, t.pc) in multi:
                    c = z3.And(c, self.CH if t.step[2] else z3.Not(self.CH))
            else:
                a = env_actor[t.step[1]]
                c = self.is_act(a)
            self.actor_of.append(a)
            conds.append(c)
        self.conds = conds
        #: the transitions of each actor
        self.by_actor: dict[int, list[int]] = {a: [] for a in range(nact)}
        for i, a in enumerate(self.actor_of):
            self.by_actor[a].append(i)
        self._sel: dict[int, Any] = {}
        self._fps: Optional[tuple[list[frozenset[int]], list[frozenset[int]]]] = None
        self.changing = sorted({k for t in trs for k in t.updates})
        self.Xn = {k: z3.BitVec(f"xn.{enc.key_names[k]}", enc.width[k]) for k in self.changing}
        good = []
        if nact < (1 << self.act_width):
            good.append(z3.ULT(self.ACT, nact))
        for a in range(nag):
            lo, hi = enc.agent_range[a]
            pcs = sorted({trs[i].pc for i in range(lo, hi)})
            good.append(z3.Implies(self.is_act(a), enc.pc_in(a, pcs)))
        # grouped by identical terms, as in ``selected_steps``
        bad_g = _Groups()
        ovf_g = _Groups()
        for t, c in zip(trs, conds):
            bad_g.add(t.problem(), c)
            ovf_g.add(z3.simplify(z3.And(t.guard, z3.Not(t.viol), t.ovf)), c)
        problem = [z3.And(cs, term) for term, cs in bad_g.items() if not z3.is_false(term)]
        ovf_good = [z3.And(cs, term) for term, cs in ovf_g.items() if not z3.is_false(term)]
        ok, nxt_val = selected_steps(enc, list(zip(trs, conds)))
        good.extend(ok)
        nxt = [self.Xn[k] == nxt_val.get(k, enc.X[k]) for k in self.changing]
        self.T_GOOD = z3.And(*good)
        self.T_NEXT = z3.And(*nxt) if nxt else z3.BoolVal(True)
        self.T_BAD = z3.Or(*problem) if problem else z3.BoolVal(False)
        self.T_OVF = z3.Or(*ovf_good) if ovf_good else z3.BoolVal(False)
        self.T_ENABLED = z3.Or(*[t.guard for t in trs]) if trs else z3.BoolVal(False)
        self.T_DONE = enc.all_done()
        self._prop_terms: dict[str, Any] = {}
        self.states: list[list[Any]] = [[z3.BitVecVal(v, w)
                                         for v, w in zip(enc.init_values, enc.width)]]
        self.acts: list[Any] = []
        self.chs: list[Any] = []
        self.bad_acts: dict[int, tuple[Any, Any]] = {}
        self.asserted_steps = 0
        #: the formula of each asserted step ``k -> k + 1`` (for ``write_smt2``)
        self.step_terms: list[Any] = []
        self.n_assumptions = 0
        self.extra_frame: Optional[Callable[[int], None]] = None

    # ---------------------------------------------------------------- one actor

    def selection(self, i: int) -> Any:
        """Transition ``i``'s selection with its actor fixed: by pc and choice only."""
        r = self._sel.get(i)
        if r is None:
            r = self._sel[i] = z3.simplify(z3.substitute(
                self.conds[i], (self.ACT, z3.BitVecVal(self.actor_of[i], self.act_width))))
        return r

    def footprints(self) -> tuple[list[frozenset[int]], list[frozenset[int]]]:
        """Per transition, the keys it reads (free in its guard, checks, overflow
        condition, selection and new values) and the keys it updates; computed once.
        Two transitions with disjoint footprints -- neither updates a key the other
        reads or updates -- commute and keep each other's outcome."""
        if self._fps is None:
            enc = self.enc
            vk = enc._var_key()
            fv = FreeVars()
            reads, writes = [], []
            for i, t in enumerate(enc.transitions):
                r: set[int] = set()
                for term in (t.guard, t.viol, t.ovf, self.selection(i), *t.updates.values()):
                    r |= {vk[v] for v in fv(term) if v in vk}
                reads.append(frozenset(r))
                writes.append(frozenset(t.updates))
            self._fps = (reads, writes)
        return self._fps

    def relation(self, a: int, idx: list[int]) -> ActorRelation:
        """Actor ``a`` restricted to the transitions ``idx`` (all of them: ``by_actor``)."""
        enc = self.enc
        trs = enc.transitions
        sel = [self.selection(i) for i in idx]
        good: list[Any] = []
        if a < self.nag and idx:
            good.append(enc.pc_in(a, sorted({trs[i].pc for i in idx})))
        ok, nxt = selected_steps(enc, [(trs[i], c) for i, c in zip(idx, sel)])
        good.extend(ok)
        if not idx:
            good = [z3.BoolVal(False)]
        en = [z3.And(c, trs[i].guard) for i, c in zip(idx, sel)]
        bad = [z3.And(c, trs[i].guard, z3.Or(trs[i].viol, trs[i].ovf))
               for i, c in zip(idx, sel)]
        return ActorRelation(z3.And(*good) if good else z3.BoolVal(True), nxt,
                             z3.Or(*en) if en else z3.BoolVal(False),
                             z3.Or(*bad) if bad else z3.BoolVal(False))

    def apply(self, rel: ActorRelation, X: list[Any], ch: Any
              ) -> tuple[Any, Any, Any, list[Any]]:
        """``rel`` taken from key values ``X`` with choice ``ch``: (good, enabled, bad,
        next values)."""
        enc = self.enc
        pairs = [(enc.X[i], X[i]) for i in range(len(X)) if X[i] is not enc.X[i]]
        pairs.append((self.CH, ch))
        sub = Substitution(pairs)
        out = list(X)
        for k, v in rel.nxt.items():
            out[k] = sub(v)
        return sub(rel.good), sub(rel.en), sub(rel.bad), out

    # ---------------------------------------------------------------- variables

    def is_act(self, a: int, act: Any = None) -> Any:
        return (self.ACT if act is None else act) == z3.BitVecVal(a, self.act_width)

    def act(self, k: int) -> Any:
        while len(self.acts) <= k:
            self.acts.append(z3.BitVec(f"act@{len(self.acts)}", self.act_width))
            self.chs.append(z3.Bool(f"choice@{len(self.chs)}"))
        return self.acts[k]

    def choice(self, k: int) -> Any:
        self.act(k)
        return self.chs[k]

    def bad_act(self, k: int) -> tuple[Any, Any]:
        if k not in self.bad_acts:
            self.bad_acts[k] = (z3.BitVec(f"bad_act@{k}", self.act_width),
                                z3.Bool(f"bad_choice@{k}"))
        return self.bad_acts[k]

    def state(self, k: int) -> list[Any]:
        while len(self.states) <= k:
            j = len(self.states)
            cur = list(self.states[-1])
            for key in self.changing:
                cur[key] = z3.BitVec(f"{self.enc.key_names[key]}@{j}", self.enc.width[key])
            self.states.append(cur)
        return self.states[k]

    def at(self, term: Any, k: int, nxt: bool = False, bad: bool = False) -> Any:
        """Instantiate a template term at level ``k`` (``Xn`` = level ``k + 1``; with
        ``bad`` the action variables are those of the violation query)."""
        X = self.enc.X
        cur = self.state(k)
        pairs = [(X[i], cur[i]) for i in range(len(X)) if cur[i] is not X[i]]
        act, ch = self.bad_act(k) if bad else (self.act(k), self.choice(k))
        pairs.append((self.ACT, act))
        pairs.append((self.CH, ch))
        if nxt:
            n = self.state(k + 1)
            pairs.extend((self.Xn[i], n[i]) for i in self.changing)
        return Substitution(pairs)(term)

    def inv_at(self, k: int) -> Any:
        """The invariant of the state of level ``k``."""
        if z3.is_true(self.inv):
            return self.inv
        X = self.enc.X
        cur = self.state(k)
        return Substitution([(X[i], cur[i]) for i in range(len(X)) if cur[i] is not X[i]])(
            self.inv)

    def prop_term(self, prop: str) -> Any:
        """A step whose first failing check has property ``prop``."""
        if prop not in self._prop_terms:
            g = _Groups()
            for t, c in zip(self.enc.transitions, self.conds):
                fv = t.first_violation(prop)
                if not z3.is_false(fv):
                    g.add(z3.simplify(z3.And(t.guard, fv)), c)
            out = [z3.And(cs, term) for term, cs in g.items()]
            self._prop_terms[prop] = z3.Or(*out) if out else z3.BoolVal(False)
        return self._prop_terms[prop]

    def props_possible(self) -> set[str]:
        return {p for t in self.enc.transitions for _, p in t.checks}

    # ---------------------------------------------------------------- assertions

    def assert_step(self, k: int, guard: Any = None) -> None:
        """Assert the good step ``k -> k + 1`` (under ``guard``, a literal the caller
        asserts once the violating steps from level ``k`` have been ruled out: a level-k
        state whose only enabled steps violate has no good successor, so asserting the
        step outright would hide those violations)."""
        assert k == self.asserted_steps
        step = self.at(z3.And(self.T_GOOD, self.T_NEXT), k, nxt=True)
        step = z3.And(step, self.inv_at(k + 1))
        self.step_terms.append(step)
        self.solver.add(step if guard is None else z3.Implies(guard, step))
        self.asserted_steps += 1
        if self.extra_frame is not None:
            self.extra_frame(k + 1)

    def literal(self, name: str) -> Any:
        self.n_assumptions += 1
        return z3.Bool(f"{name}#{self.n_assumptions}")

    # ---------------------------------------------------------------- models

    def step_of(self, m: z3.ModelRef, k: int, act: Any, ch: Any) -> tuple:
        enc = self.enc
        a = m.eval(act, model_completion=True).as_long()
        actor = self.actors[a]
        if isinstance(actor, tuple):
            return ("e", actor)
        pck = enc.key_of_slot[enc.sys.agents[actor].pc]
        pc = m.eval(self.state(k)[pck], model_completion=True).as_signed_long()
        c = z3.is_true(m.eval(ch, model_completion=True))
        choice = 1 if c and enc.sys.agent_choices(actor, pc) > 1 else 0
        return ("a", actor, choice)

    def steps_from_model(self, m: z3.ModelRef, n: int, bad_last: bool = False) -> list[tuple]:
        """The explicit engine's step ids of the first ``n`` steps of a model (the last
        one from the violation query's action variables with ``bad_last``)."""
        out = []
        for k in range(n):
            if bad_last and k == n - 1:
                act, ch = self.bad_act(k)
            else:
                act, ch = self.act(k), self.choice(k)
            out.append(self.step_of(m, k, act, ch))
        return out


def make_solver() -> z3.Solver:
    """z3's incremental bit-blasting SAT solver (QF_BV with assumptions)."""
    return z3.SolverFor("QF_BV")
