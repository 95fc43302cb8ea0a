"""The .pipe front end (spec/pipe.lark, model/lang/parser.py): the IR it builds and the
errors it gives, with file:line:column."""

from __future__ import annotations

import textwrap

import pytest

from pipeproof.model import ir
from pipeproof.model.errors import ConfigError
from pipeproof.model.lang.parser import parse


def P(text: str, filename: str = "t.pipe") -> ir.Kernel:
    return parse(textwrap.dedent(text).lstrip("\n"), filename)


def err(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as ei:
        P(text)
    return ei.value


# --------------------------------------------------------------------------- structure


def test_kernel_name_and_parameters() -> None:
    k = P("""
        import cutlass
        from cutlass.pipeline import *
        @cute.kernel
        def gemm(stages: int = 4, k_tiles: int = 2 * 4, flag=True, need):
            pass
    """)
    assert k.name == "gemm"
    assert [p.name for p in k.params] == ["stages", "k_tiles", "flag", "need"]
    assert k.params[0].default == ir.Const(4)
    assert k.params[1].default == ir.BinOp("*", ir.Const(2), ir.Const(4))
    assert k.params[2].default == ir.Const(True)
    assert k.params[3].default is None


def test_role_block() -> None:
    k = P("""
        def k():
            with role("dma", warps=[0], ctas=[0, 1]):
                pass
            with role(name="mma", warps=range(1, 5)):
                pass
    """)
    r0, r1 = k.body
    assert isinstance(r0, ir.RoleBlock) and r0.name == "dma"
    assert r0.warps == ir.ListExpr((ir.Const(0),))
    assert r0.ctas == ir.ListExpr((ir.Const(0), ir.Const(1)))
    assert r1.name == "mma" and r1.ctas is None


def test_for_range_forms() -> None:
    k = P("""
        def k():
            for a in range(3):
                pass
            for b in range(1, 3):
                pass
            for c in range(4, 0, -2):
                pass
    """)
    a, b, c = k.body
    assert (a.var, a.start, a.stop, a.step) == ("a", ir.Const(0), ir.Const(3), ir.Const(1))
    assert (b.start, b.stop, b.step) == (ir.Const(1), ir.Const(3), ir.Const(1))
    assert (c.start, c.stop, c.step) == (ir.Const(4), ir.Const(0), ir.Const(-2))


def test_if_elif_else_nests() -> None:
    k = P("""
        def k(x: int = 0):
            if x == 0:
                a = 1
            elif x == 1:
                a = 2
            else:
                a = 3
    """)
    (s,) = k.body
    assert isinstance(s, ir.If) and len(s.orelse) == 1
    inner = s.orelse[0]
    assert isinstance(inner, ir.If)
    assert inner.cond == ir.Compare("==", ir.Name("x"), ir.Const(1))
    assert inner.orelse == (ir.Assign(("a",), ir.Const(3)),)


def test_while_break_continue_with_elect_one() -> None:
    k = P("""
        def k():
            while True:
                with elect_one():
                    pass
                if done:
                    break
                continue
    """)
    (w,) = k.body
    assert isinstance(w, ir.While) and w.cond == ir.Const(True)
    assert isinstance(w.body[0], ir.With)
    assert isinstance(w.body[1].body[0], ir.Break)
    assert isinstance(w.body[2], ir.Continue)


def test_assignments() -> None:
    k = P("""
        def k():
            producer, _ = pipe.make_participants()
            n += 2
            t = (1, 2)
    """)
    a, b, c = k.body
    assert a.targets == ("producer", "_") and a.unpack
    assert isinstance(a.value, ir.Call) and a.value.func == ir.Attr(ir.Name("pipe"),
                                                                  "make_participants")
    assert b == ir.AugAssign("n", "+", ir.Const(2))
    assert c.value == ir.TupleExpr((ir.Const(1), ir.Const(2)))


def test_expressions_precedence() -> None:
    k = P("""
        def k():
            a = (x // s) % 2 ^ 1
            b = -3
            c = 0x10 | 1 << 2
            d = x if c else y
            e = not a and b or c
            f = 1_000
    """)
    a, b, c, d, e, f = [s.value for s in k.body]
    assert a == ir.BinOp("^", ir.BinOp("%", ir.BinOp("//", ir.Name("x"), ir.Name("s")),
                                       ir.Const(2)), ir.Const(1))
    assert b == ir.Const(-3)
    assert c == ir.BinOp("|", ir.Const(16), ir.BinOp("<<", ir.Const(1), ir.Const(2)))
    assert d == ir.IfExp(ir.Name("c"), ir.Name("x"), ir.Name("y"))
    assert e == ir.BoolOp("or", (ir.BoolOp("and", (ir.UnaryOp("not", ir.Name("a")),
                                                    ir.Name("b"))), ir.Name("c")))
    assert f == ir.Const(1000)


def test_calls_with_keywords_and_attributes() -> None:
    k = P("""
        def k():
            ab = PipelineTmaAsync.create(num_stages=2, tx_count=1024,)
            cute.arch.barrier(barrier_id=1)
    """)
    a, b = k.body
    assert a.value.kwargs == (("num_stages", ir.Const(2)), ("tx_count", ir.Const(1024)))
    assert b.expr.func == ir.Attr(ir.Attr(ir.Name("cute"), "arch"), "barrier")


def test_chained_comparison_is_a_conjunction() -> None:
    k = P("""
        def k():
            a = 0 <= x < 4
    """)
    v = k.body[0].value
    assert v == ir.BoolOp("and", (ir.Compare("<=", ir.Const(0), ir.Name("x")),
                                  ir.Compare("<", ir.Name("x"), ir.Const(4))))


def test_comments_blank_lines_and_continuations() -> None:
    k = P("""
        # a comment
        def k():  # trailing

            x = (1 +
                 2)
            y = 3 \\
                + 4
    """)
    assert [s.targets[0] for s in k.body] == ["x", "y"]


def test_locations_are_1_based_and_do_not_affect_equality() -> None:
    text = """
        def k():
            x = 1
            with role("a", warps=[0]):
                y = 2
    """
    a, b = P(text, "a.pipe"), P(text, "b.pipe")
    assert a == b
    x, role = a.body
    assert (x.loc.file, x.loc.line, x.loc.column) == ("a.pipe", 2, 5)
    assert role.body[0].loc.line == 4 and role.body[0].loc.column == 9
    assert str(x.loc) == "a.pipe:2:5"


# --------------------------------------------------------------------------- errors


def test_unexpected_token_names_file_line_column_and_what_was_expected() -> None:
    e = err("""
        def k():
            x = = 1
    """)
    assert (e.loc.file, e.loc.line, e.loc.column) == ("t.pipe", 2, 9)
    assert "unexpected '='" in e.message and "expected" in e.message
    assert e.render().startswith("t.pipe:2:9: error: ")


def test_expected_tokens_are_readable() -> None:
    """Anonymous literal terminals are shown by their text, not by lark's names."""
    e = err("""
        def k():
            pipe = f(a
            x = 1
    """)
    assert "anon" not in e.message.lower()
    assert "')'" in e.message or "','" in e.message


def test_unexpected_character() -> None:
    e = err("""
        def k():
            x = 1 $ 2
    """)
    assert e.loc.line == 2 and e.loc.column == 11
    assert "unexpected character '$'" in e.message


def test_bad_indentation() -> None:
    e = err("""
        def k():
            x = 1
              y = 2
    """)
    assert (e.loc.line, e.loc.column) == (3, 7)
    assert "unexpected indentation" in e.message


def test_missing_kernel() -> None:
    e = err("""
        import cute
    """)
    assert "def" in e.message


def test_for_must_iterate_over_range() -> None:
    e = err("""
        def k():
            for x in items:
                pass
    """)
    assert "range" in e.message and e.loc.line == 2


def test_return_with_a_value() -> None:
    assert "cannot return a value" in err("""
        def k():
            return 1
    """).message


def test_with_as_is_not_supported() -> None:
    assert "as NAME" in err("""
        def k():
            with elect_one() as e:
                pass
    """).message


def test_role_needs_name_and_warps() -> None:
    assert "needs a name" in err("""
        def k():
            with role(warps=[0]):
                pass
    """).message
    assert "needs warps" in err("""
        def k():
            with role("a"):
                pass
    """).message
    assert "unexpected argument" in err("""
        def k():
            with role("a", warps=[0], lanes=[1]):
                pass
    """).message


def test_positional_after_keyword() -> None:
    e = err("""
        def k():
            f(a=1, 2)
    """)
    assert "positional argument after keyword" in e.message and e.loc.line == 2


def test_only_names_can_be_assigned() -> None:
    assert "only names" in err("""
        def k():
            a.b = 1
    """).message
