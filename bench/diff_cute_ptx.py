"""Op-by-op diff of the synchronisation in pipeproof's PTX and the CuTe DSL's (issue 25 item 2).

    CUTE_DSL_ARCH=sm_90a CUTE_DSL_KEEP=ptx CUTE_DSL_DUMP_DIR=D python -c \\
        "import sys; sys.path.insert(0, 'tests/cute_kernels'); import pipeline_async as m; \\
         m.pipeline_async(stages=2, k_tiles=4)"
    python bench/diff_cute_ptx.py D/<the .ptx> examples/textbook/pipeline_async.pipe \\
        -p stages=2 -p k_tiles=4 [--structured]

Both files are reduced to their synchronisation instructions (``mbarrier.*``, fences,
``bar``/``barrier``, ``cp.async*``, ``tcgen05.commit``, ``elect.sync``), operands dropped and
qualifiers made explicit where PTX has a default (``.shared`` is ``.shared::cta``; an
``mbarrier.arrive`` without semantics is ``.release.cta``, a ``try_wait`` ``.acquire.cta``)
and sorted after the operation's name, in text order, and diffed (``difflib``).  The pipeproof side is emitted without
instrumentation (``--no-trace --no-jitter --no-checks``) and unrolled unless
``--structured`` (the DSL unrolls a ``Constexpr`` trip count).  The order of the warps'
code in the two files may differ; the diff is for reading, not a verdict.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

SYNC = re.compile(r"^\s*(?:@!?%?\w+\s+)?((?:mbarrier|fence|bar|barrier|cp\.async|tcgen05\.commit|"
                  r"elect)\.[\w.:]*|bar\.sync|bar\.arrive)")


def ops(ptx: str) -> list[str]:
    out = []
    for line in ptx.splitlines():
        line = line.split("//")[0]
        m = SYNC.match(line)
        if not m:
            continue
        op = m.group(1)
        if op.startswith("bar.warp"):
            continue  # warp convergence, not synchronisation between warps
        op = re.sub(r"\.shared(?=\.|$)", ".shared::cta", op)
        if op.startswith("mbarrier.arrive") and ".release" not in op:
            op = op.replace("mbarrier.arrive", "mbarrier.arrive.release.cta", 1)
        if op.startswith(("mbarrier.try_wait", "mbarrier.test_wait")) and ".acquire" not in op:
            op = re.sub(r"^(mbarrier\.(?:try|test)_wait(?:\.parity)?)", r"\1.acquire.cta", op)
        head, *quals = op.split(".")
        # qualifier order differs between writers (arrive.release.cta.expect_tx)
        out.append(".".join([head, quals[0]] + sorted(quals[1:])) if quals else head)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python bench/diff_cute_ptx.py")
    ap.add_argument("cute_ptx")
    ap.add_argument("pipe")
    ap.add_argument("-p", "--param", action="append", default=[])
    ap.add_argument("--structured", action="store_true")
    a = ap.parse_args(argv)
    from pipeproof.impl.emit import EmitOptions, emit_file

    params = {k: int(v) for k, v in (x.split("=", 1) for x in a.param)}
    em = emit_file(a.pipe, params, EmitOptions("sm_90a", trace=False, jitter=False,
                                               checks=False, structured=a.structured))
    mine, theirs = ops(em.ptx), ops(Path(a.cute_ptx).read_text())
    sys.stdout.writelines(difflib.unified_diff([x + "\n" for x in theirs],
                                               [x + "\n" for x in mine],
                                               "cute.compile", f"pipeproof ({em.note})"))
    print(f"\n{len(theirs)} ops (cute.compile), {len(mine)} ops (pipeproof)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
