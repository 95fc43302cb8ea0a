"""Operation modes on shared objects, and which pairs of them conflict: the independence
relation of the stubborn-set reduction (``checker/por/__init__.py``).

A footprint is a set of (object, mode): an mbarrier's words, a stage buffer's ghost
state, a queue, a CTA's exit flag, and so on, each with what the step does to it.  Two
steps conflict where they touch one object with modes that do not commute (``conflicts``:
the table ``_COMMUTE``; writes of the same fill commute, an asynchronous and a thread
write never do).  The ghost effects' modes follow ``model/system.py``'s ``ghost``
(PTX ISA, "Asynchronous operations": what each async proxy write checks).
"""

from __future__ import annotations



# Operation modes on an object.  Two operations on the same object conflict unless the
# pair is listed here (the relation is symmetric).
_COMMUTE = {
    frozenset(["O"]),             # two waits on one mbarrier (both only set ``observed``)
    frozenset(["R"]),             # reads
    frozenset(["R", "O"]),
    frozenset(["M"]),             # monotone init-visibility updates (fence, releases, promotes)
    frozenset(["MR"]), frozenset(["MR", "M"]), frozenset(["MR", "R"]),  # release flags only
    frozenset(["CA"]),            # cluster-barrier arrivals / exits (order-free completion)
    frozenset(["CW"]), frozenset(["CW", "CA"]),  # a cluster wait that can proceed cannot be
                                  # disabled: no generation completes without its warp
    # (named-barrier arrivals do NOT commute: an arrival may complete a generation and
    # reset the thread count a later arrival is checked against)
    frozenset(["H"]),             # buffer owner counts +-1
    frozenset(["H", "RD"]), frozenset(["H", "WE"]), frozenset(["H", "D"]),
    frozenset(["H", "AR"]), frozenset(["AR"]),  # async reads: check wip/dirty, count +1
    frozenset(["RD"]), frozenset(["RD", "D"]), frozenset(["RD", "AR"]),
    frozenset(["WB"]), frozenset(["WB", "WE"]), frozenset(["WB", "D"]),
    frozenset(["WE", "D"]),
    frozenset(["D"]),
    frozenset(["Q"]),             # queue push (owner) and pop (environment)
    frozenset(["F"]),             # reads of CLC responses: each ORs "a failed response was
                                  # seen" into its CTA's flag (only a try_cancel reads it)
    frozenset(["PR"]),            # reads of the parameter values still possible
    frozenset(["G"]),             # wgmma reads, commits and waits of one warpgroup
                                  # (``Footprints._wg``)
    # "PB" (strict scopes: a release publishing acquired fills) commutes with nothing
}


def _base(m: str) -> str:
    return m[:2] if m[:2] in ("WE", "WB", "AE", "AB") else m


#: asynchronous writes (TMA deliveries, cp.async) behave like thread writes towards
#: every other mode; between the two kinds of writer see ``conflicts``
_ASYNC_WRITE = {"AB": "WB", "AE": "WE"}


def conflicts(m1: str, m2: str) -> bool:
    """Do two operation modes on one object conflict?  (Memoised: modes are few.)"""
    r = _CONFLICTS.get((m1, m2))
    if r is None:
        r = _CONFLICTS[(m1, m2)] = _conflicts(m1, m2)
    return r


_CONFLICTS: dict = {}


def _conflicts(m1: str, m2: str) -> bool:
    # a wgmma wait's owner counts ("HG<warpgroup>", ``Footprints.hold_mode``) are
    # owner counts like any other; only ``Closure._conflict`` reads the warpgroup
    m1 = "H" if m1[:2] == "HG" else m1
    m2 = "H" if m2[:2] == "HG" else m2
    # write_begin/write_end modes carry the fill they write: completions of the same fill
    # commute, and a write_begin commutes with a write_end of the same fill (with another
    # fill in flight, the write_begin is a violation only before that write_end lands)
    b1, b2 = _base(m1), _base(m2)
    a1, a2 = b1 in _ASYNC_WRITE, b2 in _ASYNC_WRITE
    if a1 != a2 and {b1, b2} <= {"WB", "WE", "AB", "AE"}:
        # a thread write checks the async writes in flight and the reverse
        # (``System.ghost``): the two kinds of writer never commute
        return True
    if (a1 and b2 == "D") or (a2 and b1 == "D"):
        return True  # an async write checks the generic stores not yet fenced
    if a1:
        b1, m1 = _ASYNC_WRITE[b1], _ASYNC_WRITE[b1] + m1[2:]
    if a2:
        b2, m2 = _ASYNC_WRITE[b2], _ASYNC_WRITE[b2] + m2[2:]
    if b1 == "WE" and b2 == "WE":
        return m1 != m2
    if {b1, b2} == {"WE", "WB"}:
        return m1[2:] != m2[2:]
    return frozenset([b1, b2]) not in _COMMUTE


#: modes of operations that change an mbarrier's pending count or tx-count (commutative
#: among themselves unless one of them can complete the phase: see Closure._settle_free)
BAR_OPS = frozenset(["A", "X"])
#: modes of operations on a settle-free barrier that commute with T's (``Closure._grow``)
FREE_MODES = BAR_OPS | {"O", "NA"}


GHOST_MODE = {"read": "RD", "hold": "H", "unhold": "H", "write_begin": "WB",
               "write_end": "WE", "dirty": "D", "clean": "D", "async_read": "AR",
               "async_write_begin": "AB", "async_write_end": "AE", "tmem_ptr": "RD",
               # a wgmma's read checks like an async read and may take an owner count
               "wgmma_read": "AR"}

Footprint = frozenset  # of (object, mode)
#: a parameter split's footprint: reads and narrows the parameter values still possible
PARAM_FP = (("param",), "PS")
#: a step whose local control flow may pass a split its values decide (``run_local``):
#: it reads them, so a split elsewhere (which may decide it) conflicts with it
PARAM_READ = (("param",), "PR")
INF = 1 << 40
