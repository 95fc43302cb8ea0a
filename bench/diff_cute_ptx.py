"""Op-by-op diff of the synchronisation in pipeproof's PTX and the CuTe DSL's (issue 25 item 2).

    CUTE_DSL_ARCH=sm_90a CUTE_DSL_KEEP=ptx CUTE_DSL_DUMP_DIR=D python -c \\
        "import sys; sys.path.insert(0, 'tests/cute_kernels'); import pipeline_async as m; \\
         m.pipeline_async(stages=2, k_tiles=4)"
    python bench/diff_cute_ptx.py D/<the .ptx> examples/textbook/pipeline_async.pipe \\
        -p stages=2 -p k_tiles=4 [--structured] [--executed [--cute-param 1=4] [--clc N]]

Both files are reduced to their synchronisation ops and compared role by role
(``pipeproof/impl/ptx_sync.py``: the normalisation and the accepted differences;
``tests/test_cute_ptx_diff.py`` runs this for every kernel of tests/cute_kernels/).  The
pipeproof side is emitted without instrumentation (``--no-trace --no-jitter
--no-checks``) and unrolled unless ``--structured`` (the DSL unrolls a ``Constexpr`` trip
count).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python bench/diff_cute_ptx.py")
    ap.add_argument("cute_ptx")
    ap.add_argument("pipe")
    ap.add_argument("-p", "--param", action="append", default=[])
    ap.add_argument("--arch", default="sm_90a", choices=("sm_90a", "sm_100a"))
    ap.add_argument("--structured", action="store_true")
    ap.add_argument("--executed", action="store_true",
                    help="run both kernels lane by lane (ptx_diff.compare_executed)")
    ap.add_argument("--cute-param", action="append", default=[], metavar="INDEX=VALUE",
                    help="a scalar parameter of the DSL kernel, for --executed")
    ap.add_argument("--clc", type=int, default=0,
                    help="cancelled CLC responses, for --executed")
    a = ap.parse_args(argv)
    from pipeproof.impl.emit import EmitOptions, emit_file
    from pipeproof.impl.ptx_diff import compare, compare_executed

    params = {k: int(v) for k, v in (x.split("=", 1) for x in a.param)}
    em = emit_file(a.pipe, params, EmitOptions(a.arch, trace=False, jitter=False,
                                               checks=False, structured=a.structured))
    cute = Path(a.cute_ptx).read_text()
    if a.executed:
        cparams = {int(k): int(v) for k, v in (x.split("=", 1) for x in a.cute_param)}
        d = compare_executed(cute, em.ptx, cparams, em.manifest.args, a.clc)
    else:
        d = compare(cute, em.ptx)
    print(f"# cute.compile vs pipeproof ({em.note})")
    print(d.text())
    return 0 if d.equal else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
