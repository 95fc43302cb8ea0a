"""``pipeproof check --smt2`` stamps its query; ``pipeproof recheck`` solves it again and
compares with the verdict and the source (proofs/recheck.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeproof.cli import main
from pipeproof.proofs.recheck import body_digest, read_header, recheck, split_stamp

EX = Path(__file__).resolve().parent.parent / "examples"


def _check(src: Path, out: Path, *extra: str) -> int:
    return main(["check", str(src), "--engine", "bmc", "--smt2", str(out), *extra])


def _forge(good: Path, out: Path, body: str) -> None:
    """``good``'s stamp over another query ``body``, its digest recomputed: what a forger
    would write (recheck then judges the query on its own)."""
    meta, _ = split_stamp(good.read_text())
    meta["body"] = f"sha256={body_digest(body)}"
    out.write_text("".join(f"; pipeproof-{k}: {v}\n" for k, v in meta.items()) + body)


def test_a_certificate_rechecks_unsat(tmp_path: Path, capsys) -> None:
    out = tmp_path / "cert.smt2"
    assert _check(EX / "textbook/pipeline_async.pipe", out) == 0
    meta, claim = read_header(str(out))
    assert meta["kernel"] == "pipeline_async(stages=2, k_tiles=4)"
    assert meta["verdict"] == "PROVEN (unbounded)" and meta["expect"] == "unsat"
    assert "sha256=" in meta["source"] and "inductive invariant" in claim
    capsys.readouterr()
    assert main(["recheck", str(out)]) == 0
    text = capsys.readouterr().out
    assert "unsat" in text and "agrees with the verdict" in text


def test_a_counterexample_query_rechecks_sat(tmp_path: Path) -> None:
    out = tmp_path / "q.smt2"
    assert _check(EX / "bugs/p6-bug.pipe", out, "--bmc-certificate", "off") == 1
    r = recheck(str(out))
    assert (r.expect, r.answer, r.exit_code) == ("sat", "sat", 0)


def test_a_query_that_does_not_say_what_it_claims_is_caught(tmp_path: Path, capsys) -> None:
    """The stamp says unsat; a file whose formula was emptied (and its digest forged) is
    sat: exit 1."""
    out = tmp_path / "cert.smt2"
    assert _check(EX / "textbook/pipeline_async.pipe", out) == 0
    _forge(out, out, "(check-sat)\n")
    capsys.readouterr()
    assert main(["recheck", str(out)]) == 1
    assert "CONTRADICTS the verdict" in capsys.readouterr().out


def test_a_changed_source_makes_the_recheck_undecided(tmp_path: Path, capsys) -> None:
    src = tmp_path / "k.pipe"
    shutil.copy(EX / "textbook/pipeline_async.pipe", src)
    out = tmp_path / "cert.smt2"
    assert _check(src, out) == 0
    src.write_text(src.read_text() + "\n# edited\n")
    capsys.readouterr()
    assert main(["recheck", str(out)]) == 3
    assert "the source changed since" in capsys.readouterr().out


def test_parameter_ranges_are_stamped(tmp_path: Path) -> None:
    out = tmp_path / "r.smt2"
    assert _check(EX / "textbook/pipeline_async.pipe", out, "--param", "k_tiles=1..3") == 0
    meta, _ = read_header(str(out))
    assert "k_tiles=1..3" in meta["kernel"]
    assert recheck(str(out)).exit_code == 0


def test_bad_input_and_the_worst_code_first(tmp_path: Path, capsys) -> None:
    plain = tmp_path / "plain.smt2"
    plain.write_text("(check-sat)\n")
    assert main(["recheck", str(plain)]) == 2
    assert "not a pipeproof proof file" in capsys.readouterr().err
    assert main(["recheck", str(tmp_path / "missing.smt2")]) == 2
    assert main(["recheck", "--timeout", "0", str(plain)]) == 2
    good = tmp_path / "good.smt2"
    assert _check(EX / "textbook/pipeline_async.pipe", good) == 0
    broken = tmp_path / "broken.smt2"
    _forge(good, broken, "(check-sat)\n")
    assert main(["recheck", str(good), str(plain), str(broken)]) == 1


def test_smt2_with_the_explicit_engine_is_a_usage_error(tmp_path: Path, capsys) -> None:
    """The explicit engine has no query: --smt2 with it was silently ignored before."""
    out = tmp_path / "x.smt2"
    rc = main(["check", str(EX / "textbook/pipeline_async.pipe"), "--engine", "explicit",
               "--smt2", str(out)])
    assert rc == 2 and not out.exists()
    assert "--smt2 writes BMC's query" in capsys.readouterr().err


def test_a_file_the_check_did_not_write_is_not_stamped(tmp_path: Path, monkeypatch) -> None:
    """Only a file the check wrote gets a stamp: an older one at that path is left as it
    is (and the CLI says no query was written)."""
    from pipeproof.api import check_file
    from pipeproof.checker import bmc, certificate

    out = tmp_path / "cert.smt2"
    r = check_file(EX / "textbook/pipeline_async.pipe", engine="bmc", smt2=str(out))
    assert r.verdict.stats.extra["smt2"] == str(out)
    assert out.read_text().count("; pipeproof-version:") == 1
    out.write_text("; an older file\n")
    monkeypatch.setattr(bmc, "write_smt2", lambda *a, **k: None)
    monkeypatch.setattr(certificate, "write_smt2", lambda *a, **k: None)
    r = check_file(EX / "textbook/pipeline_async.pipe", engine="bmc", smt2=str(out))
    assert "smt2" not in r.verdict.stats.extra
    assert out.read_text() == "; an older file\n"


def test_the_expected_answer_is_what_the_query_can_show() -> None:
    """A starvation lasso is not in the unrolling's violation query (its file is unsat):
    nothing is expected of it, where a safety counterexample expects sat."""
    from pipeproof.checker.bmc import _smt2_expect
    from pipeproof.checker.verdict import Verdict

    def v(status: str, prop: str = "") -> Verdict:
        return Verdict(status, prop=prop or None)

    assert _smt2_expect("unrolling", v("VIOLATED", "starvation")) == "none"
    assert _smt2_expect("unrolling", v("VIOLATED", "deadlock")) == "sat"
    assert _smt2_expect("unrolling", v("SAFE")) == "unsat"
    assert _smt2_expect("unrolling", v("PROVEN")) == "unsat"
    assert _smt2_expect("unrolling", v("UNKNOWN")) == "none"
    for status, prop in (("VIOLATED", "deadlock"), ("VIOLATED", "starvation"), ("PROVEN", "")):
        assert _smt2_expect("certificate", v(status, prop)) == "unsat"


def test_a_range_checked_value_by_value_exports_its_first_value_once(tmp_path: Path,
                                                                     capsys) -> None:
    """--param-values: every value used to write (and now stamp) the same file; only
    the first value exports its query, stamped with that value."""
    out = tmp_path / "v.smt2"
    assert _check(EX / "textbook/pipeline_async.pipe", out, "--param-values",
                  "--param", "k_tiles=1..3") == 0
    text = out.read_text()
    assert text.count("; pipeproof-version:") == 1
    meta, _ = read_header(str(out))
    assert meta["kernel"] == "pipeline_async(stages=2, k_tiles=1)"
    assert "no query written" not in capsys.readouterr().err
    assert recheck(str(out)).exit_code == 0
