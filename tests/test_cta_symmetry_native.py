"""CTA symmetry in the native engine (``checker/native``, issue 26 item 2).

The generated ``canon`` keeps the least of a state's CTA renamings (its keys permuted,
``search.cta_sources``); against the native engine without it: the same verdict,
property and counterexample length, in fewer states.  A counterexample found among
representatives is found again step by step on the concrete model through
``search.canon_keys`` (the generated ``canon`` in Python), so a deadlock of 44 steps
checks the two agree at every state of the run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("cffi", reason="the native engine needs cffi (pip install .[native])")
if not (shutil.which("cc") or shutil.which("gcc")):
    pytest.skip("the native engine needs a C compiler", allow_module_level=True)

from pipeproof.api import compile_file  # noqa: E402
from pipeproof.checker.cta_symmetry import cta_automorphisms  # noqa: E402
from pipeproof.checker.native.search import (canon_keys, cta_sources,  # noqa: E402
                                             check_native)
from pipeproof.checker.symbolic import Encoding  # noqa: E402
from pipeproof.model.system import System  # noqa: E402

EX = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("rel", ["bugs/p4-bug.pipe", "bugs/p4-fixed.pipe",
                                 "bugs/l1-fixed.pipe"])
def test_native_same_verdicts_fewer_states(rel: str) -> None:
    s = System(compile_file(EX / rel))
    kw = dict(max_states=2_000_000, timeout=float("inf"), symmetry=True)
    without = check_native(s, cta_symmetry=False, **kw)
    with_ = check_native(s, cta_symmetry=True, **kw)
    assert without.status in ("PROVEN", "VIOLATED"), without.reason
    assert (with_.status, with_.prop, with_.depth) == \
        (without.status, without.prop, without.depth), with_.reason
    assert with_.stats.extra.get("cta_automorphisms", 1) > 1
    assert with_.stats.states < without.stats.states
    if with_.trace is not None:
        assert len(with_.trace.steps) == len(without.trace.steps)


def test_key_renamings_are_permutations_with_one_representative() -> None:
    """Each renaming of the keys is a permutation; the Python ``canon`` gives every
    renaming of a state the same representative."""
    s = System(compile_file(EX / "textbook/pipeline_tma_async_multicast.pipe"))
    perms = cta_automorphisms(s)
    enc = Encoding(s)
    sources = cta_sources(enc, perms)
    assert len(sources) == 3
    for src in sources:
        assert sorted(src) == list(range(enc.nkeys))
        assert src != list(range(enc.nkeys))
    vals = list(enc.init_values)
    # a state that is not symmetric: change the keys of CTA 0's first warp
    for k, name in enumerate(enc.key_names):
        if name.startswith("cta0.w0.") or name.startswith("ab.full[0]@cta0."):
            vals[k] += 1
    rep = canon_keys(vals, [], sources)
    for src in sources:
        renamed = [vals[src[k]] for k in range(enc.nkeys)]
        assert renamed != vals
        assert canon_keys(renamed, [], sources) == rep
