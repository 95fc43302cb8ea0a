"""One short paragraph in words about a violation (``--explain``).

The paragraph says what the property means for the kernel author, which agent did what
at which step and source line, what happened just before on the same stage or barrier
(the step that makes the violation possible), and the usual fix.  For a deadlock it
groups the stuck warps by what they wait on and says why nobody will signal it
(``Trace.blocked``).  It is built from the trace only: nothing here re-states the
semantics.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from .properties import BY_NAME
from .trace import Event, Trace
from .verdict import Verdict

#: the usual repair, per property, in CUTLASS words
FIXES: dict[str, str] = {
    "read-before-full": "wait on the stage's full barrier (consumer_wait / "
                        "wait_and_advance) with the state of the fill you read, and read only "
                        "between that wait and the release",
    "overwrite-before-release": "acquire the stage (producer_acquire / acquire_and_advance) "
                                "before writing it, and release it on the consumer side only "
                                "after the last read (consumer_release after the MMA that "
                                "reads it has been committed)",
    "use-before-init": "make the mbarrier init visible before any use: "
                       "pipeline_init_arrive/pipeline_init_wait (fence.mbarrier_init plus a "
                       "cluster barrier for other CTAs, or a CTA barrier locally)",
    "double-init": "initialise each barrier array once (one create per pipeline)",
    "arrival-overflow": "make the barrier's arrival count match the arrivals: a CooperativeGroup "
                        "of Agent.Thread counts threads, one per arriving lane; release each "
                        "stage once",
    "tx-overflow": "keep tx_count and the bytes of the copies that complete on the barrier "
                   "equal and below 2^20-1",
    "count-out-of-range": "use an arrival count between 1 and 2^20-1",
    "stale-parity": "keep one PipelineState per side and advance it once per stage; do not "
                    "reuse a state that is two or more phases behind",
    "phase-overrun": "wait for a phase to complete before arriving on the barrier's next phase "
                     "(acquire before commit, wait before release)",
    "deadlock": "check that every wait has its arrivals: the barrier's count must equal the "
                "arrivals of one phase, tx_count the bytes that complete on it, and every "
                "stage a consumer waits on must be committed (and every acquired stage "
                "released)",
    "starvation": "make sure every loop that waits also lets the other side progress",
    "dangling-arrive-at-exit": "call producer_tail() (producer.tail()) before a producer warp "
                               "exits, and wait for bulk stores (tma_store_wait) before the "
                               "CTA exits",
    "remote-op-to-exited-cta": "keep every CTA of the cluster alive until the remote arrivals "
                               "and multicast copies that target it are done (producer_tail, "
                               "a final cluster barrier)",
    "mask-outside-cluster": "build multicast masks from the cluster layout "
                            "(create_tma_multicast_mask) and keep ranks inside the cluster",
    "named-barrier-misuse": "use barrier ids 0..15 and thread counts that are multiples of "
                            "32 and equal on both sides",
    "cluster-barrier-misuse": "pair every cluster_arrive with one cluster_wait",
    "role-misuse": "call producer methods only from the producer warp and consumer methods "
                   "only from the consumer warps (a warp that must do both, like a CLC "
                   "scheduler, makes its producer state with "
                   "make_pipeline_state(PipelineUserType.ProducerConsumer, ...)), and issue "
                   "no CLC query after a failed response",
    "elect-misuse": "do not nest elect_one()",
    "tmem-misuse": "allocate tensor memory before any warp uses it and publish the address "
                   "(TmemAllocator.allocate, then wait_for_alloc in every warp before "
                   "retrieve_ptr), free it once every MMA has committed and every reader "
                   "released its accumulator, free it exactly once before the CTA exits, "
                   "allocate before relinquish_alloc_permit, and in a 2-CTA pair run the "
                   "allocator warp's alloc and free in both CTAs",
    "gmem-race": "order the CTAs' global-memory accesses through a flag: the writer stores "
                 "its partial, then updates the flag with a release at gpu scope "
                 "(arrive_inc/store with sem='release': red.release.gpu / st.release.gpu, "
                 "after a CTA barrier when other warps stored); the reader spins on the flag "
                 "with an acquire (wait_eq/wait_ge, ld.acquire.gpu) before it reads or "
                 "overwrites the data",
    "missing-proxy-fence": "issue fence_proxy_async (fence.proxy.async.shared::cta) after "
                           "writing shared memory with ordinary stores and before the TMA "
                           "store or MMA reads it",
}

_WAITS = re.compile(r"^(\S+) \(([^)]*)\) waits on (\S+) for parity (\d)")


def _who(ev: Event) -> str:
    return f"{ev.actor} ({ev.role})" if ev.kind == "agent" else f"the {ev.actor} unit"


def _related(trace: Trace, last: Event) -> Optional[Event]:
    """The latest earlier step by another agent on the same stage of the same pipeline
    (or the same barrier): what the violating step raced with."""
    for ev in reversed(trace.events[:-1]):
        if ev.actor == last.actor:
            continue
        if last.barrier and ev.barrier == last.barrier:
            return ev
        if last.pipeline and ev.pipeline == last.pipeline and ev.stage == last.stage \
                and last.stage is not None:
            return ev
    return None


def _agent_order(name: str) -> tuple:
    m = re.match(r"cta(\d+)\.w(\d+)$", name)
    return (int(m.group(1)), int(m.group(2)), "") if m else (1 << 30, 0, name)


def _deadlock_groups(blocked: list[str]) -> list[str]:
    """Group stuck warps by what they wait on: one sentence per barrier."""
    groups: dict[tuple, list[str]] = {}
    rest = []
    for b in blocked:
        m = _WAITS.match(b)
        if m:
            groups.setdefault((m.group(3), m.group(4), m.group(2)), []).append(m.group(1))
            rest.append(None)
        else:
            rest.append(b)
    out = []
    for (bar, parity, role), agents in groups.items():
        agents.sort(key=_agent_order)
        sample = next(b for b in blocked if b.startswith(agents[0] + " "))
        tail = sample.split(" -- ", 1)[1] if " -- " in sample else ""
        who = agents[0] if len(agents) == 1 else f"{', '.join(agents[:-1])} and {agents[-1]}"
        verb = "waits" if len(agents) == 1 else "wait"
        out.append(f"{who} ({role}) {verb} on {bar} for parity {parity}"
                   + (f" -- {tail}" if tail else ""))
    out.extend(r for r in rest if r)
    return out


def _agents_in(sentence: str) -> list[str]:
    head = sentence.split(" (", 1)[0]
    return re.findall(r"cta\d+\.w\d+", head) or [head]


def _line(loc: str) -> str:
    m = re.search(r":(\d+)(?::\d+)?$", loc or "")
    return m.group(1) if m else ""


def _lines(locs: list[str]) -> str:
    ls = sorted({_line(x) for x in locs if _line(x)}, key=int)
    if not ls:
        return ""
    return ("line " if len(ls) == 1 else "lines ") + ", ".join(ls)


def _names(xs: list[str]) -> str:
    return xs[0] if len(xs) == 1 else f"{', '.join(xs[:-1])} and {xs[-1]}"


def tx_mismatch(trace: Trace, barrier: str) -> Optional[dict]:
    """The byte accounting of ``barrier``'s current phase at the end of ``trace``, when
    what was expected (expect_tx / arrive.expect_tx) and what the TMA loads brought
    differ, and the difference is final: no arrival is missing, and either more bytes
    landed than were expected, or every warp that expected bytes issued its TMA loads onto
    the barrier after its expect.  Computed from the barrier changes the model recorded
    (``Event.changes``): nothing is re-derived.  None when there is no such mismatch."""
    seg: list[tuple[Event, Any]] = []
    start = 0                     # index of the first event of the current phase
    for i, ev in enumerate(trace.events):
        for c in ev.changes:
            if c.barrier != barrier:
                continue
            if c.phase[0] != c.phase[1]:
                seg = []          # a phase completed: the current phase starts after it
                start = i + 1
            else:
                seg.append((ev, c))
    if not seg or seg[-1][1].pending[1] != 0:
        return None
    expects = [(ev, c.tx[1] - c.tx[0]) for ev, c in seg
               if ev.kind == "agent" and "expect_tx" in ev.op and c.tx[1] > c.tx[0]]
    lands = [(ev, c.tx[0] - c.tx[1]) for ev, c in seg
             if ev.kind == "env" and ev.op == "complete_tx" and c.tx[0] > c.tx[1]]
    n = sum(b for _, b in expects)
    m = sum(b for _, b in lands)
    if not expects or not lands or n == m:
        return None
    # the tma_load that issued each landing: the issuer's latest load onto this barrier
    loads: list[Event] = []
    for ev, _ in lands:
        who = re.search(r"\bfrom (cta\d+\.w\d+)", ev.what)
        src = None
        for e in reversed(trace.events[:ev.step - 1]):
            if e.kind == "agent" and e.op == "tma_load" and \
                    barrier in e.barrier.split(", ") and (who is None or e.actor == who.group(1)):
                src = e
                break
        if src is None:
            return None           # cannot name the load: say nothing
        loads.append(src)
    if m < n:
        # fewer bytes: only final if every expecting warp went on to load onto it
        for ev, _ in expects:
            if not any(l.actor == ev.actor and l.step > ev.step for l in loads):
                return None
    sizes = [b for _, b in lands]
    return {"barrier": barrier, "expected": n, "landed": m,
            # lines whose copies of one size could make up the missing bytes
            "left_out": [x for x in (_left_out(trace, barrier, start, loads) if m < n else [])
                         if len(x["bytes"]) == 1 and isinstance(x["bytes"][0], int)
                         and x["bytes"][0] > 0 and (n - m) % x["bytes"][0] == 0],
            "expect_loc": _lines([ev.loc for ev, _ in expects]),
            "expect_by": sorted({ev.actor for ev, _ in expects}, key=_agent_order),
            "load_loc": _lines([e.loc for e in loads]),
            "load_by": sorted({e.actor for e in loads}, key=_agent_order),
            "sizes": sizes}


def _left_out(trace: Trace, barrier: str, start: int, loads: list[Event]) -> list[dict]:
    """The source lines of TMA loads issued in ``barrier``'s current phase (from event
    ``start`` on) that bring bytes to the same barrier of other CTAs but none to this
    one -- a multicast mask (or a peer's load) that leaves this CTA out.  One entry per
    line: the line, and each issuing warp with the CTAs its copy reaches."""
    base, _, me = barrier.rpartition("@")
    here = {_line(e.loc) for e in loads}
    by_line: dict[str, list[tuple[str, list[str]]]] = {}
    size: dict[str, set] = {}
    for e in trace.events[start:]:
        if e.kind != "agent" or e.op != "tma_load" or not _line(e.loc):
            continue
        dests = [d for d in e.barrier.split(", ") if d.rpartition("@")[0] == base]
        if not dests or barrier in dests:
            continue
        by_line.setdefault(_line(e.loc), []).append(
            (e.actor, [d.rpartition("@")[2] for d in dests]))
        size.setdefault(_line(e.loc), set()).add(e.tx)
    return [{"line": ln, "issuers": iss, "bytes": sorted(size[ln], key=str)}
            for ln, iss in sorted(by_line.items(), key=lambda x: int(x[0]))
            if ln not in here]


def multicast_diagnosis(d: dict) -> str:
    """A sentence for ``tx_mismatch``'s ``left_out``: the loads whose copies reach the
    barrier's twins in other CTAs but not this one ('' when there are none)."""
    if not d.get("left_out"):
        return ""
    cta = d["barrier"].rpartition("@")[2]
    parts = []
    for x in d["left_out"]:
        iss = "; ".join(f"{a} to {', '.join(t)}" for a, t in x["issuers"])
        parts.append(f"the tma_load at line {x['line']} ({iss})")
    return (f"{d['barrier']} gets no bytes from {_names(parts)}, although "
            f"{'it brings' if len(parts) == 1 else 'they bring'} the same stage to the "
            f"other CTAs' {d['barrier'].rpartition('@')[0]}: {cta} is missing from "
            f"{'its' if len(parts) == 1 else 'their'} multicast masks, or the peer that "
            f"should send {cta} these bytes does not")


def tx_diagnoses(trace: Trace, barriers: list[str]) -> list[str]:
    """One sentence per distinct tx mismatch among ``barriers`` (``tx_mismatch``)."""
    groups: dict[tuple, list[str]] = {}
    for b in barriers:
        d = tx_mismatch(trace, b)
        if d is None:
            continue
        key = (d["expected"], d["landed"], d["expect_loc"], d["load_loc"],
               tuple(d["sizes"]), len(d["expect_by"]), len(d["load_by"]))
        groups.setdefault(key, []).append(b)
    out = []
    for (n, m, eloc, lloc, sizes, _, _), bars in groups.items():
        ds = [tx_mismatch(trace, b) for b in bars]
        d = {k: sorted({a for x in ds if x for a in x[k]}, key=_agent_order)
             for k in ("expect_by", "load_by")}
        if len(set(sizes)) == 1 and len(sizes) > 1:
            parts = f"{len(sizes)} x {sizes[0]} B"
        else:
            parts = " + ".join(f"{x} B" for x in sizes)
        out.append(
            f"{_names(bars)} {'expects' if len(bars) == 1 else 'each expect'} {n} B per "
            f"phase (expect_tx by {_names(d['expect_by'])}"
            + (f", {eloc}" if eloc else "") + f") but the TMA loads that complete on "
            f"{'it' if len(bars) == 1 else 'each'} bring {m} B ({parts}, tma_load by "
            f"{_names(d['load_by'])}" + (f", {lloc}" if lloc else "") + ")"
            + (f": {n - m} B are never delivered, so the phase never completes"
               if m < n else
               f": {m - n} B too many, the transaction count goes below zero and the "
               "phase never completes"))
    return out


_BUFFER = re.compile(r"\b(?:reads|stores to|writes|starts writing) (\S+?)\[(\d+)\]@cta(\d+) "
                     r"while (?:an asynchronous write|thread stores|a TMA/cp.async write)")


def in_flight_write(trace: Trace) -> Optional[Event]:
    """For a violation that meets a write still in flight (read-before-full with an
    asynchronous write not landed or thread stores not released; an overwrite while a
    TMA/cp.async write is in flight): the step that issued that write -- the latest
    earlier write of the same buffer stage, named as the model's message names the
    buffer.  None when the message names no such write or no step matches."""
    m = _BUFFER.search(trace.detail or "")
    if m is None or not trace.events:
        return None
    name, stage = m.group(1), int(m.group(2))
    base = name[:-4] if name.endswith(".buf") else name
    last = trace.events[-1]
    for ev in reversed(trace.events[:-1]):
        if ev.kind != "agent" or ev.stage != stage:
            continue
        if ev.pipeline != base and f"{base} stage {stage}" not in ev.what:
            continue
        if ev.op in ("tma_load", "cp.async") or (ev.op == "ghost" and "write" in ev.what):
            return ev if ev.step != last.step else None
    return None


def _arrivals(trace: Trace, barrier: str, start: int, end: int) -> list[tuple[Event, int]]:
    """The warps' arrivals on ``barrier`` in ``trace.events[start:end]``, with how many
    each brought (a completing arrival: what was still pending)."""
    out = []
    for ev in trace.events[start:end]:
        for c in ev.changes:
            if c.barrier != barrier or ev.kind != "agent" or "arrive" not in ev.op:
                continue
            n = c.pending[0] if c.phase[0] != c.phase[1] else c.pending[0] - c.pending[1]
            if n > 0:
                out.append((ev, n))
    return out


def surplus_arrival(trace: Trace) -> Optional[str]:
    """For an over-arrival (the last step arrives on a barrier whose phase already has
    all its arrivals -- completed, or waiting for bytes only): who that phase's arrivals
    came from and whose arrival is the surplus (the same warp twice, or several warps of
    one role where the count expects fewer), from the barrier changes the model
    recorded (``Event.changes``).  None when the trace does not show that phase."""
    if not trace.events:
        return None
    last = trace.events[-1]
    bars = [c.barrier for c in last.changes] or [b for b in last.barrier.split(", ") if b]
    for b in bars:
        seen = [c for ev in trace.events[:-1] for c in ev.changes if c.barrier == b]
        if not seen:
            continue
        expected = seen[-1].expected
        done = [i for i, ev in enumerate(trace.events[:-1])
                for c in ev.changes if c.barrier == b and c.phase[0] != c.phase[1]]
        # the phase the arrival was meant for: the current one when its arrivals are all
        # in (it waits for bytes only), else the one that completed last
        cur = _arrivals(trace, b, (done[-1] + 1) if done else 0, len(trace.events) - 1)
        if sum(n for _, n in cur) >= expected > 0:
            arrivals, phase, state = cur, seen[-1].phase[1], "has had"
            why = ("lands in that phase as well, which has all its arrivals and waits only "
                   "for its bytes, and is the surplus")
        elif done:
            end = done[-1]
            arrivals = _arrivals(trace, b, done[-2] + 1 if len(done) > 1 else 0, end + 1)
            phase = next(c for c in trace.events[end].changes if c.barrier == b).phase[0]
            state = "got"
            why = "was meant for that phase too and is the surplus"
        else:
            continue
        if not arrivals:
            continue
        got = ", ".join(f"{_who(ev)}" + (f" x{n}" if n > 1 else "") + f" at step {ev.step}"
                        + (f" (line {_line(ev.loc)})" if _line(ev.loc) else "")
                        for ev, n in arrivals)
        text = (f"{b} counts {expected} arrival{'s' if expected != 1 else ''} per phase, and "
                f"phase {phase} {state} {'them' if expected != 1 else 'it'} from {got}; the "
                f"arrive of {_who(last)} at step {last.step}"
                + (f" (line {_line(last.loc)})" if _line(last.loc) else "")
                + f" {why}")
        mine = [ev for ev, _ in arrivals if ev.actor == last.actor]
        peers = sorted({ev.actor for ev, _ in arrivals if ev.role == last.role}
                       | {last.actor}, key=_agent_order)
        twice: dict[str, list[int]] = {}
        for ev, _ in arrivals:
            twice.setdefault(ev.actor, []).append(ev.step)
        twice = {w: steps for w, steps in twice.items() if len(steps) > 1}
        if mine:
            text += (f": {last.actor} had arrived in that phase already (step "
                     f"{mine[-1].step}), so it arrived twice for one phase")
        elif twice:
            # the surplus arrival is a victim: other warps each arrived more than once
            text += ": " + "; ".join(
                f"{w} arrived {len(st)} times in that phase (steps "
                f"{', '.join(map(str, st))})" for w, st in
                sorted(twice.items(), key=lambda kv: _agent_order(kv[0])))
            text += (", so a warp arrived more than once for one phase and left no room "
                     f"for {last.actor}'s arrival")
        elif len(peers) > 1:
            text += (f": {len(peers)} warps of role {last.role} ({_names(peers)}) each "
                     f"arrive where the count expects {expected} -- count every "
                     "arriving warp (the CooperativeGroup's size), or let one of them arrive")
        return text
    return None


def explain(v: Verdict) -> str:
    """A paragraph for a VIOLATED verdict ("" for other verdicts)."""
    info = BY_NAME.get(v.prop or "")
    tr = v.trace
    if tr is None or info is None:
        return ""
    text = f"What went wrong ({v.prop}): {info.summary}."
    if v.prop == "deadlock" and tr.blocked:
        n = len(tr.events)
        groups = _deadlock_groups(tr.blocked)
        shown = groups[:4]
        more = sum(len(_agents_in(g)) for g in groups[4:])
        text += (f" After {n} steps nothing can move: " + "; ".join(shown)
                 + (f"; and {more} more stuck warps" if more else "") + ".")
        bars: list[str] = []
        for b in tr.blocked:
            m = _WAITS.match(b)
            if m and m.group(3) not in bars:
                bars.append(m.group(3))
        mc = [multicast_diagnosis(d) for d in (tx_mismatch(tr, b) for b in bars) if d]
        mc = [x for x in mc if x]
        if mc:
            text += (" The cause is a multicast that leaves a CTA out: " + "; ".join(mc)
                     + ". Usual fix: build each load's multicast mask from the cluster "
                     "layout (create_tma_multicast_mask with the load's mcast_mode), so "
                     "that every CTA whose tx_count counts the bytes receives them."
                     + f" Rule: {info.source}.")
            return text
        tx = tx_diagnoses(tr, bars)
        if tx:
            text += " The cause is a byte count mismatch: " + "; ".join(tx) + "."
            text += (" Usual fix: make tx_count (the expect_tx of a phase) equal the bytes "
                     "of all the TMA loads that complete on the barrier in one phase, "
                     "counting the copies that peer CTAs send to it (multicast, "
                     "cta_group::2), or fix the loads' bytes." + f" Rule: {info.source}.")
            return text
        if all(" spins on " in b for b in tr.blocked):
            # every stuck warp spins on a global flag (System.blocked_reason)
            text += (" Usual fix: make the value each spin waits for one that the updates "
                     "of the other CTAs reach: count the arrive_inc of every CTA that "
                     "signals the flag (one elected thread each, as CUTLASS's arrive_inc), "
                     "and do not wait for an update of the waiting CTA itself."
                     + f" Rule: {info.source}; PTX ISA ld.acquire / red (spins).")
            return text
    elif tr.events:
        last = tr.events[-1]
        text += f" In step {last.step}, {_who(last)} did '{last.what}'"
        text += f" (at {last.loc})." if last.loc else "."
        if tr.detail:
            text += f" The model reports: {tr.detail}."
        exited = [e for e in tr.events if e.op == "exit"]
        rel = _related(tr, last)
        if v.prop in ("dangling-arrive-at-exit", "remote-op-to-exited-cta") and exited:
            ex = exited[-1]
            text += (f" CTA {ex.cta} had exited at step {ex.step}, when its last warp "
                     f"{_who(ex)} left" + (f" (at {ex.loc})" if ex.loc else "")
                     + ", while that work was still in flight.")
        surplus = surplus_arrival(tr) if v.prop == "arrival-overflow" else None
        if surplus:
            text += f" Whose arrival is too many: {surplus}."
        elif rel is not None:
            text += (f" The last step of another agent on the same "
                     f"{'barrier' if last.barrier and rel.barrier == last.barrier else 'stage'}"
                     f" was step {rel.step}: {_who(rel)} did '{rel.what}'"
                     + (f" (at {rel.loc})." if rel.loc else "."))
    if tr.loop_start is not None:
        text += f" The steps from {tr.loop_start} on repeat for ever."
    fix = FIXES.get(v.prop or "")
    if fix:
        text += f" Usual fix: {fix}."
    text += f" Rule: {info.source}."
    return text
