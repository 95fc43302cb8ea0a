"""Partial-order reduction for the explicit engine: stubborn sets.

In a state ``s`` the engine may explore only the enabled transitions of a *stubborn set*
``T`` of units (warps, and environment units: in-flight TMA/CLC deliveries and the
completion queues of each warp) instead of all enabled transitions.  ``T`` satisfies
Valmari's conditions:

* D1 -- no sequence of transitions of units outside ``T`` can conflict with an enabled
  transition of ``T``, nor enable a disabled one;
* D2 -- ``T`` has an enabled transition that units outside ``T`` cannot disable.

Under D1 and D2 every reachable deadlock of the full graph is reachable in the reduced
graph by a permutation of the same steps, and every violating step still occurs in it
(Valmari, "Stubborn sets for reduced state space generation", 1990; Godefroid,
"Partial-order methods for the verification of concurrent systems", 1996, ch. 4).  A
violation may be reached by a *longer* run, though: when no step of ``T`` is on the
shortest run to it, an enabled step of ``T`` is taken first (p9-bug: 55 steps reduced,
51 shortest).  So ``explicit.check_explicit`` confirms the length with a search without
this reduction.

What a unit outside ``T`` can do before ``T`` moves is over-approximated by walking its
program from its current pc; the walk stops at a blocking instruction that stays blocked
while ``T`` is frozen (a wait whose barrier only ``T`` can change, a cluster wait some
frozen warp has not arrived at).  Conflicts are decided on *operations*, not only on the
objects they touch: two arrivals at a cluster barrier commute, two ``hold``s of a stage
buffer commute, a ``write_begin`` commutes with a ``write_end``, two waits on one barrier
commute, and so on (table ``_COMMUTE``); everything else on a shared object conflicts.
Some pairs commute only in the current state (``Closure.stubborn``): arrivals at one
mbarrier or named barrier that units outside T cannot complete on their own
(``_settle_free``, ``_nb_settle_free``; for ``bar.sync 0`` an exit counts as an arrival),
an exit that cannot be its CTA's last (``_holders``), an exit of T before another unit's
check of whether its CTA exited (one way only: ``Closure._conflict``, EXIT_READS_COMMUTE),
uses of a barrier array whose init no later promotion can change (``_saturated``), a
CTA-wide ``bar.sync`` arrival that cannot complete even with everything outside T (its
visibility footprint shrinks to release flags, "MR"), and an init while no promotion can
happen (``_init_settles``).
A wait on a counted named barrier stays blocked while the warps outside T that have not
arrived cannot make up the count; a ``try_wait`` whose phase cannot complete before T
moves returns 0, and a walk then takes the failing side of a branch on its token
(``Footprints.known_segment``); a wgmma wait gives back only owner counts its warpgroup
holds or takes within its members' futures ("HG"; docs/engines.md, "Reductions and the
stage buffers' ghost state").  A wait further down a warp's program that needs its
barrier's next phase (``Footprints.wait_completions``) stays blocked while the operations
outside T cannot complete the barrier twice (``_may_complete``; orders that over-arrive
end in a violation, not a completion).

Cost (none of this changes a set: tests/test_por_speed.py compares every state's set with
a frozen copy of the code before it): a round of the closure is a function of T in a
state, so seeds whose sets meet share the rest (``Closure._grow``); ``_can_complete`` is a
pure function of the barrier's counts and the operations, memoised across states; a
warp's future is reused across the settle rounds while no barrier that stopped its walk
is dropped; the futures' barrier operations are grouped once per future, by small ints.
A walk's result (footprint, counts, operations of the segments it passed) reads only the
static tables, so it is shared by every state (``Reducer._walk_memo``); a settle round asks
again only about barriers whose operations changed in it; a future carries its footprint
by object, so the conflict check looks up T's few objects in it.  The waits a round ahead
are memoised across states by what they read: the warp's pc and the phases of the
barriers it may wait on (``Reducer._later_memo``; tests/test_por_memo.py compares them with
the answer computed afresh).

The same closure runs in C where cffi and a C compiler are present
(``checker/native/porwalk.py``, passed in as ``stubborn_sets(native=...)`` by the engine):
the same set for every seed (tests/test_por_closure.py); ``Reducer._stubborn`` falls back to
``Closure.stubborn`` for a state the C does not take.

Where each part lives (each module imports only those above it):

* ``modes`` -- operation modes and the conflict relation (``conflicts``);
* ``counts`` -- the mbarrier arithmetic (can the operations to come complete a phase);
* ``footprints`` -- the static footprints, segments and waits of every program;
* ``tables`` -- the same as integer tables, for the closure in C;
* ``futures`` -- one state as the closure reads it, and the futures of its units;
* ``closure`` -- the closure in one state (``Closure``);
* ``reducer`` -- what the explicit engine calls per state (``Reducer``, ``stubborn_sets``).
"""

from __future__ import annotations

from .closure import Closure, NativeClosureUnavailable
from .footprints import Footprints
from .modes import BAR_OPS, Footprint, conflicts
from .reducer import Reducer, stubborn_sets

__all__ = ["BAR_OPS", "Closure", "Footprint", "Footprints", "NativeClosureUnavailable",
           "Reducer", "conflicts", "stubborn_sets"]
