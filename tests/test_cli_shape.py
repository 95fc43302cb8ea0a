"""The command line's shape (issue 24 item 5): ``check --help`` lists the user's options
before the engine tuning, which sits under an "advanced" heading; every command has a
description and examples; errors name flags on the command line and keyword arguments
in Python."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeproof.api import check_file
from pipeproof.cli import build_parser, main
from pipeproof.model.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
P1 = ROOT / "examples" / "bugs" / "p1-bug.pipe"


def _help(*argv: str) -> str:
    ap = build_parser()
    sub = ap._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    return (sub[argv[0]] if argv else ap).format_help()


def test_check_help_puts_user_options_first() -> None:
    text = _help("check")
    heads = [text.index(h) for h in ("what to check:", "output:", "engine and limits:",
                                     "advanced engine tuning:", "examples:")]
    assert heads == sorted(heads)
    advanced = text.index("advanced engine tuning:")
    for flag in ("--param", "--json", "--html", "--engine", "--timeout", "--no-confirm"):
        assert text.index(flag + " ") < advanced, flag
    for flag in ("--depth", "--bmc-steps", "--bmc-certificate", "--por", "--confirm-timeout",
                 "--smt2"):
        assert text.index("  " + flag) > advanced, flag
    assert text.startswith("usage: pipeproof check KERNEL [--param NAME=VALUE ...] [options]")
    # no generic "options:" group holding -h alone before the user's options
    assert "\noptions:" not in text and "-h, --help" in text
    assert text.index("-h, --help") > text.index("output:")


@pytest.mark.parametrize("command", ["check", "recheck", "emit", "conform"])
def test_every_command_has_a_description_and_examples(command: str) -> None:
    text = _help(command)
    assert "\nexamples:\n" in text
    assert f"  pipeproof {command} " in text.split("examples:", 1)[1]
    body = text.split("\n\n", 2)[1]  # the description, after the usage
    assert body[:1].isupper() and body.rstrip().endswith("."), body
    for line in text.splitlines():  # every option says what it does
        if line.startswith("  -") and "  " not in line.strip():
            nxt = text.splitlines()[text.splitlines().index(line) + 1]
            assert nxt.startswith(" " * 10), f"{command}: {line.strip()} has no help"


def test_top_level_help_has_examples() -> None:
    text = _help()
    assert "examples:" in text and "pipeproof check examples/bugs/p1-bug.pipe" in text


@pytest.mark.parametrize("kw,python,flag", [
    ({"depth": -1}, "depth must be at least 0", "--depth must be at least 0"),
    ({"timeout": 0}, "timeout must be a positive number", "--timeout must be a positive"),
    ({"max_states": 0}, "max_states must be at least 1", "--max-states must be at least 1"),
    ({"confirm_timeout": -1}, "confirm_timeout must be at least 0",
     "--confirm-timeout must be at least 0"),
])
def test_limits_speak_python_in_python_and_flags_on_the_command_line(
        capsys: Any, kw: dict, python: str, flag: str) -> None:
    with pytest.raises(ConfigError) as e:
        check_file(P1, **kw)
    assert python in e.value.message and "--" not in e.value.message
    (name, value), = kw.items()
    assert main(["check", str(P1), "--" + name.replace("_", "-"), str(value)]) == 2
    assert flag in capsys.readouterr().err


def test_parameter_errors_speak_params_in_python(capsys: Any, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        check_file(P1, {"k_tile": 3})
    assert "params['k_tile']: the kernel has no parameter 'k_tile'" in e.value.message
    assert "did you mean 'k_tiles'?" in e.value.hint
    assert main(["check", str(P1), "--param", "k_tile=3"]) == 2
    assert "--param k_tile: the kernel has no parameter" in capsys.readouterr().err
    src = P1.read_text()
    f = tmp_path / "k.pipe"
    f.write_text(src.replace("stages: int = 2", "stages: int", 1))
    assert "stages: int" in f.read_text() and "stages: int = 2" not in f.read_text()
    with pytest.raises(ConfigError) as e:
        check_file(f)
    assert "pass params={'stages': VALUE}" in e.value.message
    assert main(["check", str(f)]) == 2
    assert "pass --param stages=VALUE" in capsys.readouterr().err


def test_smt2_with_the_explicit_engine(capsys: Any, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        check_file(P1, engine="explicit", smt2=str(tmp_path / "q.smt2"))
    assert "smt2 writes BMC's query" in e.value.message and "engine='bmc'" in e.value.message
    assert main(["check", str(P1), "--engine", "explicit", "--smt2",
                 str(tmp_path / "q.smt2")]) == 2
    assert "(use --engine bmc)" in capsys.readouterr().err
