"""NamedBarrier forms as CuTe DSL 4.8 emits them (tests/test_surplus_and_named_barriers.py).

A producer warpgroup signals a consumer warpgroup on named barrier 1 (256 threads, both
sides) and both meet on barrier 2; ``variant`` picks how the producers signal:

  "aligned":    ``full.arrive()`` (bar.arrive)                        -> PROVEN
  "unaligned":  ``full.arrive_unaligned()`` (barrier.arrive, no .aligned; the consumers'
                ``wait_unaligned()`` is an aligned bar.sync in the DSL) -> PROVEN
  "elected":    ``full.arrive()`` inside ``elect_one()``: one lane of each producer
                warp executes the aligned bar.arrive -> VIOLATED named-barrier-misuse
  "elected_unaligned": ``arrive_unaligned()`` inside ``elect_one()`` -> refused
                (UNKNOWN: a partial warp's unaligned arrival is not modelled)

Not one of the differential kernels of tests/cute_kernels/ (no .pipe twin of its own:
the .pipe forms are in tests/test_surplus_and_named_barriers.py).
"""
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor
from cutlass.pipeline import NamedBarrier

THREADS = 256


@cute.kernel
def forms_kernel(mOut: cute.Tensor, variant: cutlass.Constexpr):
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    full = NamedBarrier(barrier_id=1, num_threads=THREADS)
    done = NamedBarrier(barrier_id=2, num_threads=THREADS)
    if warp_idx < 4:
        if cutlass.const_expr(variant == "aligned"):
            full.arrive()
        if cutlass.const_expr(variant == "unaligned"):
            full.arrive_unaligned()
        if cutlass.const_expr(variant == "elected"):
            with cute.arch.elect_one():
                full.arrive()
        if cutlass.const_expr(variant == "elected_unaligned"):
            with cute.arch.elect_one():
                full.arrive_unaligned()
        done.arrive_and_wait()
    if warp_idx >= 4:
        if cutlass.const_expr(variant == "unaligned"):
            full.wait_unaligned()
        else:
            full.arrive_and_wait()
        done.arrive_and_wait()


@cute.jit
def forms_host(mOut: cute.Tensor, variant: cutlass.Constexpr):
    forms_kernel(mOut, variant).launch(grid=(1, 1, 1), block=(THREADS, 1, 1))


def named_barrier_forms(variant: str = "aligned"):
    mOut = make_fake_compact_tensor(cutlass.Float32, (THREADS,), assumed_align=16)
    return cute.compile(forms_host, mOut, variant)
