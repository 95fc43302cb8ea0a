"""Differential test: the BMC engine and the explicit engine agree on generated programs.

On random valid configurations and random single mutations of every class
(tests/generators.py):

* where the explicit engine (full interleaving graph, ``reduce=False``) finds a
  counterexample of ``n <= DEPTH`` steps, BMC to ``DEPTH`` finds one of exactly ``n`` steps
  (both are shortest) violating the same property, or -- when several properties tie
  at that length -- one of the properties the oracle lists for that length;
* where the explicit engine finds none (PROVEN), BMC reports no violation: PROVEN, or
  SAFE with the depth it reached, never VIOLATED;
* where the explicit counterexample is longer than ``DEPTH`` steps, BMC may still find
  it (``DEPTH`` levels of chained steps reach further than ``DEPTH`` steps), and then
  with the same length; it never reports PROVEN;
* where BMC runs out of time (UNKNOWN at depth ``d``), no explicit counterexample may be
  ``d`` steps or shorter.

Each program is checked by BMC either way (hypothesis draws it): with the certificate (``checker/certificate.py``:
a z3-certified enumeration decides PROVEN, and constrains the levels otherwise) and with
the unrolling alone.  Where a certificate exists, it is free of problems exactly when the
explicit engine finds no safety violation or deadlock.

Starvation (a lasso) has no shortest-length guarantee in either engine; only the
verdict is compared there.  BMC runs with its default chained steps, so this also
checks the confirmation of chain counterexamples; tests/test_chain.py checks the chain
search on its own.
"""

from __future__ import annotations

from typing import Any, Optional

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeproof.checker.bmc import check_bmc
from pipeproof.checker.explicit import check_explicit
from pipeproof.model.errors import ConfigError

import generators as G
from test_certificate import orbit_classes
from test_reduction_hypothesis import shortest_violations
from helpers import NO_DEADLINE

SETTINGS = dict(deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DEPTH = 20
#: seconds for confirming a chain counterexample (most take well under a second; a long
#: one can take minutes, which the test then checks the weaker way)
CONFIRM = 30.0


def _length(v: Any) -> Optional[int]:
    return len(v.trace) if v.trace is not None else None


def _compare(source: str, what: str, certificate: bool) -> None:
    try:
        system = G.build_system(source)
    except ConfigError:
        return  # input errors never reach an engine
    e = check_explicit(system, max_states=200_000, timeout=NO_DEADLINE, reduce=False)
    if e.status == "UNKNOWN":
        return  # too big for the oracle; nothing to compare against
    _compare_bmc(source, what, e, certificate)


def _compare_bmc(source: str, what: str, e: Any, certificate: bool) -> None:
    # default steps (chains, each counterexample confirmed shortest by single steps)
    b = check_bmc(G.build_system(source), depth=DEPTH, timeout=NO_DEADLINE, liveness=False,
                  confirm_timeout=CONFIRM, certificate=certificate)
    msg = (f"{what}\n  explicit: {e.headline()} len={_length(e)}\n  bmc (certificate "
           f"{'on' if certificate else 'off'}): {b.headline()} len={_length(b)} "
           f"{b.reason or ''}\n--- source ---\n{source}")
    cert = b.stats.extra.get("certificate", {})
    if "problem_free" in cert:
        # a certified reachable set is free of problems exactly when the exhaustive
        # explicit search finds no safety violation or deadlock
        safe = e.status != "VIOLATED" or e.prop == "starvation"
        assert cert["problem_free"] == safe, msg
        if e.status == "PROVEN":
            # both enumerate every reachable state, one in the model's values, the other
            # as the distinct key vectors z3 certified -- up to permutations of
            # interchangeable warps when the certificate is symmetric
            full = e.stats.states
            if cert["symmetry"]:
                assert cert["states"] == orbit_classes(G.build_system(source)) <= full, msg
            else:
                assert cert["states"] == full, msg
    if b.status == "UNKNOWN":
        # out of time (a loaded machine): what BMC did establish must still hold -- no
        # counterexample of up to b.depth steps exists
        assert "timeout" in (b.reason or ""), msg
        assert not (e.status == "VIOLATED" and e.prop != "starvation"
                    and _length(e) <= b.depth), msg
        return
    if e.status == "VIOLATED" and e.prop == "starvation":
        # the explicit engine's lassos need not be in reach of DEPTH; BMC's safety part
        # must not invent a violation
        assert b.status != "VIOLATED" or b.prop == "starvation", msg
        return
    if e.status == "VIOLATED" and (_length(e) <= DEPTH or b.status == "VIOLATED"):
        # DEPTH levels of chained steps cover every run of up to DEPTH steps and may
        # reach longer counterexamples; a confirmed one is a shortest one
        assert b.status == "VIOLATED", msg
        if b.stats.extra.get("shortest") is False:
            # the confirmation ran out of its budget: a real run, no shorter than the
            # shortest (the property may differ: another one may come first)
            assert _length(b) >= _length(e), msg
            return
        assert _length(b) == _length(e), msg
        if b.prop != e.prop:
            oracle = shortest_violations(G.build_system(source))
            assert oracle is not None and oracle[0] == _length(e), msg
            assert b.prop in oracle[1] and e.prop in oracle[1], msg + f"\n  oracle {oracle}"
        return
    # no counterexample within DEPTH: BMC agrees
    assert b.status in ("PROVEN", "SAFE"), msg
    if b.status == "PROVEN":
        assert e.status == "PROVEN", msg


@settings(max_examples=8, **SETTINGS)
@given(G.programs(), st.booleans())
def test_bmc_agrees_on_valid_programs(prog: G.Program, certificate: bool) -> None:
    _compare(prog.source, prog.describe(), certificate)


@settings(max_examples=15, **SETTINGS)
@given(G.mutants(include_config_errors=False), st.booleans())
def test_bmc_agrees_on_mutants(prog: G.Program, certificate: bool) -> None:
    _compare(prog.source, prog.describe(), certificate)
