"""The generic-form MLIR reader and the lifter's strictness, on hand-written text (no
CuTe DSL needed)."""

from __future__ import annotations

import pytest

from pipeproof.frontend.cute.interp import LiftError, Lifter, is_side_effecting
from pipeproof.frontend.cute.mlir_text import MlirSyntaxError, Module
from pipeproof.frontend.cute.values import crd2idx, parse_tuple, slice_extent

TEXT = '''#loc = loc(unknown)
#loc1 = loc("/u/k.py":12:4)
#loc2 = loc("/lib/cutlass/pipeline/sm90.py":277:8)
#loc3 = loc(callsite(#loc2 at #loc1))
"builtin.module"() ({
  "cuda.kernel"() <{function_type = () -> (), sym_name = "kern"}> ({
    %0 = "arith.constant"() <{value = 7 : i32}> : () -> i32 loc(#loc)
    %1 = "arith.constant"() <{value = 5 : i32}> : () -> i32 loc(#loc)
    %2 = "arith.addi"(%0, %1) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32 loc(#loc3)
    OP
    "cuda.return"() : () -> () loc(#loc)
  }) {cute.kernel, cutlass_launch_facts = {exact_block_dim = array<i64: 64, 1, 1>, exact_cluster_dim = array<i64: 1, 1, 1>, exact_grid_dim = array<i64: 1, 1, 1>}} : () -> () loc(#loc)
}) : () -> () loc(#loc)
'''


def module(op: str = "") -> Module:
    return Module(TEXT.replace("OP", op))


def test_reader_ops_and_locations():
    m = module()
    (k,) = m.kernels()
    ops = k.regions[0][0].ops
    assert [o.name for o in ops] == ["arith.constant", "arith.constant", "arith.addi",
                                     "cuda.return"]
    add = ops[2]
    assert add.operands == ["%0", "%1"] and add.results == ["%2"]
    assert add.result_types == ["i32"]
    frames = m.frames(add.loc)
    assert [(f.file, f.line) for f in frames] == [("/lib/cutlass/pipeline/sm90.py", 277),
                                                  ("/u/k.py", 12)]


def test_reader_refuses_custom_form():
    with pytest.raises(MlirSyntaxError):
        Module("module {\n  func.func @f() { return }\n}\n")


def test_lifter_user_frame_skips_library_frames():
    m = module()
    lf = Lifter(m, library_roots=("/lib",))
    add = m.kernels()[0].regions[0][0].ops[2]
    assert lf.user_frame(add).file == "/u/k.py"
    assert lf.api_call(add) == ""  # function names are not in this text
    assert lf.launch.block == 64 and lf.launch.cluster == (1, 1, 1)


def test_unknown_side_effecting_op_is_refused():
    m = module('"nvvm.mystery.sync"(%2) : (i32) -> () loc(#loc3)')
    with pytest.raises(LiftError) as e:
        Lifter(m, library_roots=("/lib",)).run()
    assert "unsupported op nvvm.mystery.sync" in str(e.value)
    assert e.value.loc is not None and e.value.loc.line == 12


@pytest.mark.parametrize("name, strict", [
    ("nvvm.barrier", True), ("llvm.inline_asm", True), ("cute_nvgpu.arch.foo", True),
    ("nvvm.read.ptx.sreg.tid.x", False), ("arith.addi", False), ("cute.slice", False)])
def test_side_effecting_names(name, strict):
    assert is_side_effecting(name) is strict


def test_unknown_pure_op_is_opaque_not_an_error():
    m = module('%9 = "cute.some_layout_op"(%2) : (i32) -> i32 loc(#loc3)')
    lf = Lifter(m, library_roots=("/lib",)).run()
    assert lf.programs  # every warp lifted


def test_cute_layout_algebra():
    assert parse_tuple("((4,1),?,2)") == ((4, 1), "?", 2)
    assert crd2idx((3, 1), (32, 2), (1, 32)) == 35
    assert crd2idx(5, ((2, 4),), ((1, 8),)) == 1 + 2 * 8  # colexicographic
    assert slice_extent((None, 1), (128, 2), (1, 128)) == (128, 128)
    assert slice_extent((None, None), (4, 8), (8, 1)) == (0, 32)
