"""impl/ptx_sync.py: the normalised synchronisation ops of a PTX file (no CuTe DSL
needed; tests/test_cute_ptx_diff.py compares with cute.compile's PTX)."""

from __future__ import annotations

from pipeproof.impl.ptx_sync import canonical, sync_ops


def test_canonical_forms_agree():
    """Defaults made explicit, qualifier order irrelevant, copies of the same effect."""
    assert canonical("mbarrier.arrive.shared.b64") == \
        canonical("mbarrier.arrive.release.cta.shared::cta.b64")
    assert canonical("mbarrier.try_wait.parity.shared.b64") == \
        canonical("mbarrier.try_wait.parity.acquire.cta.shared::cta.b64")
    assert canonical("mbarrier.try_wait.parity.shared.b64") != \
        canonical("mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64")
    assert canonical("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
                     "complete_tx::bytes.L2::cache_hint") == \
        canonical("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes")


def test_constants_are_resolved_through_movs():
    ptx = "\tmov.b32 %r14, 1;\n\tmbarrier.try_wait.parity.shared.b64 P1, [%r13], %r14, 10;\n" \
          "\tmbarrier.arrive.shared.b64 %rd2, [%r17], %r14;\n\tmbarrier.arrive.shared.b64 " \
          "%rd2, [%r17];\n\tmbarrier.init.shared.b64 [%r1], %r9;\n"
    got = [str(o) for _, o in sync_ops(ptx)]
    assert got[0].endswith(" p1") and got[1].endswith(" n=1") and got[2].endswith(" n=1")
    assert got[3].endswith(" ?")

