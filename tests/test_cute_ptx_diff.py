"""Op-by-op diff of the synchronisation in pipeproof's PTX and cute.compile's (issue 25
item 2), for every real CuTe DSL kernel of ``tests/cute_kernels/`` and its ``.pipe`` twin.

Both sides are reduced to their synchronisation ops (``impl/ptx_sync.py``: mbarrier
init / arrive / expect_tx / try_wait with parity, bulk copies, fences, named and cluster
barriers, ``tcgen05.commit``) and compared role by role after the accepted differences
that ``ptx_diff.compare`` lists (``elect.sync`` vs lane 0, the set-up once vs per warp,
tensor-map vs 1-D bulk copies, the DSL's one code path for several warps or CTAs run
per program, ...).  The pipeproof side is emitted without
instrumentation and unrolled (the DSL kernels take their trip counts as ``Constexpr``
and unroll them).  ``DIFFERS`` lists the kernels whose PTX still differs, and how; they
are strict xfails, so a kernel that starts to agree must be moved out of the list.

The DSL side needs nvidia-cutlass-dsl (skipped otherwise); one kernel runs by default,
the others are ``slow`` (each ``cute.compile`` takes seconds).
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from pipeproof.impl.emit import EmitOptions, emit_file
from pipeproof.impl.ptx_diff import compare, compare_executed
from pipeproof.impl.ptx_sync import sync_ops

pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed "
                    "(pip install 'pipeproof[cute]'): no CuTe DSL PTX to diff against")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS = os.path.join(HERE, "cute_kernels")


def _twins() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(glob.glob(os.path.join(KERNELS, "*.py"))):
        src = open(path).read()
        arch = re.search(r'^ARCH = "(\w+)"', src, re.M)
        twin = re.search(r"Twin: (\S+\.pipe)", src)
        if arch and twin:
            out.append((os.path.basename(path)[:-3], arch.group(1), twin.group(1)))
    return out


TWINS = _twins()

#: kernel -> why the static reading cannot match its text with the twin's (strict xfail);
#: the executed reading (``test_executed_sync_matches_cute_dsl``) compares every kernel
DIFFERS = {
    "pipeline_async_runtime_k": "the DSL kernel's k_tiles is a run-time argument: its "
                                "PTX keeps one loop body (plus what the compiler peels), "
                                "the twin is emitted unrolled for the default k_tiles",
    "pipeline_async_timed_wait": "every DSL wait is a timed try_wait, tried again once, "
                                 "then spun on: three try_wait ops in the text per wait "
                                 "where the twin's blocking wait has one",
    "pipeline_clc_fetch_async": "the DSL's scheduler and worker loops run until the CLC "
                                "response says no more work: a run-time loop in its PTX "
                                "(one body), against the twin's unrolled programs",
}

_CACHE: dict[str, str] = {}


def _cute_ptx(names: list[str], arch: str, tmp: str) -> None:
    """Compile ``names`` (one architecture: the DSL reads it once, at import) to PTX; each
    kernel's file is the one its compile added to the dump folder."""
    todo = [n for n in names if n not in _CACHE]
    if not todo:
        return
    dump = os.path.join(tmp, arch)
    os.makedirs(dump, exist_ok=True)  # the DSL writes its dumps only into an existing one
    code = ("import sys, os, glob, json; sys.path.insert(0, %r)\n"
            "got = {}\n"
            "for n in sys.argv[1:]:\n"
            "    before = set(glob.glob(os.path.join(%r, '*.ptx')))\n"
            "    m = __import__(n); getattr(m, n)()\n"
            "    got[n] = sorted(set(glob.glob(os.path.join(%r, '*.ptx'))) - before)\n"
            "print(json.dumps(got))\n") % (KERNELS, dump, dump)
    env = dict(os.environ, CUTE_DSL_ARCH=arch, CUTE_DSL_KEEP="ptx", CUTE_DSL_DUMP_DIR=dump)
    r = subprocess.run([sys.executable, "-c", code, *todo], env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    for n in todo:
        assert len(got[n]) == 1, f"cute.compile of {n} left {got[n]}"
        _CACHE[n] = open(got[n][0]).read()


def _diff(name: str, arch: str, twin: str, tmp: str, batch: list[str]):
    _cute_ptx(batch, arch, tmp)
    em = emit_file(os.path.join(ROOT, twin), {},
                   EmitOptions(arch, trace=False, jitter=False, checks=False,
                               structured=False))
    return compare(_CACHE[name], em.ptx)


def _case(t: tuple[str, str, str]):
    marks = [] if t[0] == "pipeline_async" else [pytest.mark.slow]
    if t[0] in DIFFERS:
        marks.append(pytest.mark.xfail(reason=DIFFERS[t[0]], strict=True))
    return pytest.param(*t, id=t[0], marks=marks)


@pytest.mark.parametrize("name,arch,twin", [_case(t) for t in TWINS])
def test_sync_ops_match_cute_dsl(name, arch, twin, tmp_path_factory):
    tmp = str(tmp_path_factory.getbasetemp() / "cute_ptx")
    # compile every kernel of this architecture in one process (the slow run takes all)
    batch = [name] if name == "pipeline_async" else \
        [n for n, a, _ in TWINS if a == arch and n != "pipeline_async"]
    d = _diff(name, arch, twin, tmp, batch)
    assert d.equal, f"{name} vs {twin}:\n{d.text()}"



def test_the_diff_sees_what_matters(tmp_path_factory):
    """Not vacuous: against the DSL's PipelineAsync, pipeproof's PTX with one parity
    flipped, or one arrive removed, differs."""
    tmp = str(tmp_path_factory.getbasetemp() / "cute_ptx")
    _cute_ptx(["pipeline_async"], "sm_90a", tmp)
    em = emit_file(os.path.join(ROOT, "examples/textbook/pipeline_async.pipe"), {},
                   EmitOptions("sm_90a", trace=False, jitter=False, checks=False,
                               structured=False))
    cute = _CACHE["pipeline_async"]
    assert compare(cute, em.ptx).equal
    assert "], 1, 10000000;" in em.ptx
    assert not compare(cute, em.ptx.replace("], 1, 10000000;", "], 0, 10000000;", 1)).equal
    lines = em.ptx.splitlines()
    i = max(k for k, ln in enumerate(lines) if "mbarrier.arrive.release" in ln)
    assert not compare(cute, "\n".join(lines[:i] + lines[i + 1:])).equal


#: kernels whose DSL code is one path for several warps or both CTAs of a pair, compared
#: by running its role predicates (``impl/ptx_onepath.py``)
ONE_PATH = {"pipeline_tma_store": ("examples/textbook/pipeline_tma_store.pipe", "sm_90a"),
            "pipeline_umma_async": ("tests/cute_kernels/pipeline_umma_async.pipe", "sm_100a"),
            "pipeline_tma_umma_2cta": ("tests/cute_kernels/pipeline_tma_umma_2cta.pipe",
                                       "sm_100a")}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ONE_PATH))
def test_the_one_path_diff_sees_every_op(name, tmp_path_factory):
    """Not vacuous: with any one synchronisation op of pipeproof's programs removed
    (set-up included), or any one wait's parity flipped, the kernels compared through
    the DSL's one code path differ."""
    twin, arch = ONE_PATH[name]
    tmp = str(tmp_path_factory.getbasetemp() / "cute_ptx")
    _cute_ptx([n for n, a, _ in TWINS if a == arch and n != "pipeline_async"], arch, tmp)
    cute = _CACHE[name]
    em = emit_file(os.path.join(ROOT, twin), {},
                   EmitOptions(arch, trace=False, jitter=False, checks=False,
                               structured=False))
    assert compare(cute, em.ptx).equal
    lines = em.ptx.splitlines()
    first = min(i for i, ln in enumerate(lines) if ln.startswith("$P"))
    ops = [ln for ln, o in sync_ops(em.ptx) if ln > first]
    assert len(ops) > 40
    for ln in ops:
        assert not compare(cute, "\n".join(lines[:ln] + lines[ln + 1:])).equal, lines[ln]
        for a, b in ((", 1, 10000000;", ", 0, 10000000;"),
                     (", 0, 10000000;", ", 1, 10000000;")):
            if a in lines[ln]:
                flip = lines[:ln] + [lines[ln].replace(a, b)] + lines[ln + 1:]
                assert not compare(cute, "\n".join(flip)).equal, lines[ln]


# ---- the executed reading: both kernels run, lane by lane (``ptx_diff.compare_executed``)

#: kernel -> the runs to compare: (the DSL kernel's scalar parameters by index, the
#: twin's parameters, cancelled CLC responses); one run of the default configuration
#: for the others.  The run-time trip count is checked at values that leave every
#: remainder of the DSL's 4-way unrolled loop; the CLC kernel's grid of 3 clusters gets
#: 0, 1 or 2 cancelled responses.
EXECUTED_RUNS = {
    "pipeline_async_runtime_k": [({1: k}, {"k_tiles": k}, 0) for k in (1, 2, 3, 4, 5, 7, 9)],
    "pipeline_clc_fetch_async": [({}, {}, n) for n in (0, 1, 2)],
}
#: compiled for the default run (sm_90a, one process): the kernels only this reading
#: can compare with their twins
DEFAULT_EXECUTED = ("pipeline_async", "pipeline_async_runtime_k",
                    "pipeline_async_timed_wait")


def _executed_case(t):
    marks = [] if t[0] in DEFAULT_EXECUTED else [pytest.mark.slow]
    return pytest.param(*t, id=t[0], marks=marks)


@pytest.mark.parametrize("name,arch,twin", [_executed_case(t) for t in TWINS])
@pytest.mark.parametrize("structured", [False, True], ids=["unrolled", "structured"])
def test_executed_sync_matches_cute_dsl(name, arch, twin, structured, tmp_path_factory):
    """Every lane of every warp, run through the DSL's PTX and through the twin's
    emitted PTX (unrolled, and structured with run-time trip counts): the same
    synchronisation, operand for operand and barrier for barrier (``compare_executed``)."""
    tmp = str(tmp_path_factory.getbasetemp() / "cute_ptx")
    batch = [n for n in DEFAULT_EXECUTED if n in {t[0] for t in TWINS}] \
        if name in DEFAULT_EXECUTED else \
        [n for n, a, _ in TWINS if a == arch and n not in DEFAULT_EXECUTED]
    _cute_ptx(batch, arch, tmp)
    for cute_params, params, clc in EXECUTED_RUNS.get(name, [({}, {}, 0)]):
        em = emit_file(os.path.join(ROOT, twin), params,
                       EmitOptions(arch, trace=False, jitter=False, checks=False,
                                   structured=structured))
        d = compare_executed(_CACHE[name], em.ptx, cute_params, em.manifest.args, clc)
        assert d.equal, f"{name} vs {twin} {params} clc={clc}:\n{d.text()}"


def test_the_executed_reading_sees_what_matters(tmp_path_factory):
    """Not vacuous: the run-time loop of the DSL kernel against the twin at another trip
    count, with one parity flipped, with one arrive dropped, or with the barriers of
    two stages swapped, differs; a trip count the run does not know is no match."""
    tmp = str(tmp_path_factory.getbasetemp() / "cute_ptx")
    _cute_ptx(list(DEFAULT_EXECUTED), "sm_90a", tmp)
    cute = _CACHE["pipeline_async_runtime_k"]
    twin = os.path.join(ROOT, "examples/textbook/pipeline_async.pipe")

    def em(k: int) -> str:
        return emit_file(twin, {"k_tiles": k}, EmitOptions(
            "sm_90a", trace=False, jitter=False, checks=False, structured=False)).ptx

    ptx = em(5)
    assert compare_executed(cute, ptx, {1: 5}, {}).equal
    assert not compare_executed(cute, ptx, {1: 4}, {}).equal
    assert not compare_executed(cute, em(6), {1: 5}, {}).equal
    unknown = compare_executed(cute, ptx, {}, {})
    assert not unknown.equal and "not evaluable" in unknown.text()
    flipped = ptx.replace("], 1, 10000000;", "], 0, 10000000;", 1)
    assert flipped != ptx and not compare_executed(cute, flipped, {1: 5}, {}).equal
    lines = ptx.splitlines()
    i = max(k for k, ln in enumerate(lines) if "mbarrier.arrive.release" in ln)
    assert not compare_executed(cute, "\n".join(lines[:i] + lines[i + 1:]), {1: 5},
                                {}).equal
    # the same op on the other stage's barrier: only the barrier naming can tell
    wait = r"(add\.u32 %r\d+, %smem, )(\d+)(;\n\$_w\d+:\n\tmbarrier\.try_wait)"
    offs = sorted({m.group(2) for m in re.finditer(wait, ptx)})
    assert len(offs) >= 2
    a, b = offs[:2]
    swapped = re.sub(wait, lambda m: m.group(1) + {a: b, b: a}.get(m.group(2), m.group(2))
                     + m.group(3), ptx)
    assert swapped != ptx and not compare_executed(cute, swapped, {1: 5}, {}).equal
    # renaming every use (initialisation included) is the same kernel
    renamed = re.sub(r"(, %smem, )(" + a + "|" + b + r")(;)",
                     lambda m: m.group(1) + {a: b, b: a}[m.group(2)] + m.group(3), ptx)
    assert renamed != ptx and compare_executed(cute, renamed, {1: 5}, {}).equal
