"""Facts of the lowering the lifter relies on, checked against the PTX that the same
``cute.compile`` produces (``frontend/cute/sync_ops.py`` states them): the MLIR shows a
whole-warp ``cute.copy`` of a TMA atom, the PTX an ``elect.sync``-guarded issue; a
multicast load is one ``.multicast::cluster`` copy; a 2-CTA load completes on the pair
leader's barrier (``.cta_group::2``); remote arrives go through ``mapa``; the bytes
per CTA of the multicast boxes make up the ``arrive.expect_tx`` count.  Skipped where
nvidia-cutlass-dsl is not installed."""

from __future__ import annotations

import re

import pytest

from cute_helpers import cases

pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed "
                                      "(pip install 'pipeproof[cute]')")

from pipeproof.frontend.cute import lift_text  # noqa: E402
from pipeproof.frontend.cute.capture import compiled_ptx, prepare_environment  # noqa: E402
from pipeproof.frontend.cute.entry import find_entry, load_module, parse_spec  # noqa: E402
from pipeproof.model.program import Arrive, TmaLoad, TmaStore  # noqa: E402

CASES = {c.name: c for c in cases() if c.bug == 0}


def _lift_and_ptx(name: str):
    c = CASES[name]
    prepare_environment(c.arch)
    spec = parse_spec(c.entry)
    fn = find_entry(load_module(spec.path), spec)
    cap, ptx = compiled_ptx(fn, c.arch)
    ck, _ = lift_text(cap.text, name, {}, c.path, cap.dsl_version)
    return ck, ptx.splitlines()


def _elect_guarded(lines: list[str], i: int) -> bool:
    """Is line ``i`` inside the block an ``elect.sync`` predicate branches around?"""
    preds = set()
    for line in reversed(lines[max(0, i - 12):i]):
        s = line.strip()
        if s.endswith(":"):  # a label: the block starts here
            break
        m = re.match(r"elect\.sync\s+%r\d+\|(%p\d+)", s)
        if m:
            preds.add(m.group(1))
        m = re.match(r"not\.pred\s+(%p\d+),\s*(%p\d+)", s)
        if m:
            preds.add(m.group(1))
    before = "\n".join(lines[max(0, i - 12):i])
    return any(re.search(rf"elect\.sync\s+%r\d+\|{re.escape(p)}\b", before)
               or re.search(rf"not\.pred\s+{re.escape(p)},", before)
               for p in preds) and bool(re.search(r"@%p\d+ bra", before))


def _tma_loads(lines):
    return [i for i, s in enumerate(lines)
            if "cp.async.bulk.tensor" in s and "complete_tx" in s]


@pytest.mark.parametrize("name", ["pipeline_tma_async", "pipeline_tma_async_multicast",
                                  "pipeline_tma_umma_2cta"])
def test_every_tma_load_is_one_elected_issue(name):
    ck, lines = _lift_and_ptx(name)
    loads = _tma_loads(lines)
    assert loads, "no TMA load in the PTX"
    for i in loads:
        assert _elect_guarded(lines, i), f"unelected TMA load: {lines[i].strip()}"
    if name == "pipeline_tma_async":  # k_tiles=3 copies: three issues, not 3 x 32
        counts = [sum(isinstance(i, TmaLoad) for i in p.code) for p in ck.programs]
        assert sorted(counts) == [0, 0, 0, 0, 3]


def test_multicast_load_is_one_multicast_copy():
    ck, lines = _lift_and_ptx("pipeline_tma_async_multicast")
    loads = _tma_loads(lines)
    assert loads and all(".multicast::cluster" in lines[i] for i in loads)
    lifted = [i for p in ck.programs for i in p.code if isinstance(i, TmaLoad)]
    assert lifted and all(len({d.bar.cta for d in i.deliveries}) > 1 for i in lifted)


def test_two_cta_load_completes_on_the_leader():
    ck, lines = _lift_and_ptx("pipeline_tma_umma_2cta")
    loads = _tma_loads(lines)
    assert loads and all(".cta_group::2" in lines[i] for i in loads)
    peer = [i for p in ck.programs if p.cta % 2 == 1 for i in p.code
            if isinstance(i, TmaLoad)]
    assert peer, "the peer CTA issues its half of the loads"
    assert all(d.bar.cta == 0 for i in peer for d in i.deliveries)


def test_remote_arrives_go_through_mapa():
    ck, lines = _lift_and_ptx("pipeline_tma_async_multicast")
    text = "\n".join(lines)
    assert "mapa.shared::cluster" in text and "mbarrier.arrive.shared::cluster" in text
    remote = [a for p in ck.programs for i in p.code if isinstance(i, Arrive)
              for a in i.arrivals if a.bar.cta != p.cta]
    assert remote, "the lifted consumer releases reach the peer CTAs' empty barriers"


def test_tma_store_is_not_elected_by_the_lowering():
    """A TMA store is issued by every lane the user's own guard lets through: the
    lowering adds no elect.sync (the lifted program keeps one store per warp; the
    lanes' stores read the same smem and are committed and waited together)."""
    ck, lines = _lift_and_ptx("pipeline_tma_store")
    stores = [i for i, s in enumerate(lines) if "cp.async.bulk.tensor" in s
              and "bulk_group" in s]
    assert stores and not any(_elect_guarded(lines, i) for i in stores)
    assert any(isinstance(i, TmaStore) for p in ck.programs for i in p.code)


def _expect_tx_values(lines: list[str]) -> set[int]:
    """The tx-counts of the PTX's ``mbarrier.arrive.expect_tx``: an immediate, or a
    register set by one ``mov`` of an immediate."""
    movs = {}
    for s in lines:
        m = re.match(r"\s*mov\.b32\s+(%r\d+),\s*(\d+);", s)
        if m:
            movs.setdefault(m.group(1), set()).add(int(m.group(2)))
    out: set[int] = set()
    for s in lines:
        m = re.search(r"mbarrier\.arrive\.expect_tx\S*\s+\S+,\s*\[[^\]]+\],\s*(%r\d+|\d+);", s)
        if m:
            x = m.group(1)
            got = {int(x)} if x.isdigit() else movs.get(x)
            assert got and len(got) == 1, f"tx-count of {s.strip()} is not one constant"
            out |= got
    return out


@pytest.mark.parametrize("name", ["pipeline_tma_async_multicast", "pipeline_tma_async_2x1"])
def test_multicast_box_bytes_per_cta_make_up_the_expect_tx(name):
    """The bytes per CTA the lifter gives each multicast box (a share of the box per
    destination) add up, for every CTA and stage, to the tx-count the compiled kernel's
    ``arrive.expect_tx`` announces: counted as the whole box per destination, a correct
    kernel would look like a tx-count overflow or a deadlock."""
    ck, lines = _lift_and_ptx(name)
    expect = _expect_tx_values(lines)
    assert len(expect) == 1, expect
    got: dict = {}
    fills: dict = {}
    for p in ck.programs:
        for i in p.code:
            if isinstance(i, TmaLoad):
                assert len({d.bar.cta for d in i.deliveries}) == len(i.deliveries)
                for d in i.deliveries:
                    got[d.bar] = got.get(d.bar, 0) + d.bytes
            if isinstance(i, Arrive):
                for a in i.arrivals:
                    if a.tx:
                        fills[a.bar] = fills.get(a.bar, 0) + 1
    multicast = [i for p in ck.programs for i in p.code
                 if isinstance(i, TmaLoad) and len(i.deliveries) > 1]
    assert multicast, "no multicast load lifted"
    assert got and set(got) == set(fills)
    (e,) = expect
    assert {b: got[b] / fills[b] for b in got} == {b: e for b in got}
