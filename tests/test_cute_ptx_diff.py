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
from pipeproof.impl.ptx_diff import compare
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

#: kernel -> how its PTX still differs from the twin's emitted PTX (strict xfail)
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
