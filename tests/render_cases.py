"""Violating kernels for the renderer tests: every ``examples/bugs/*-bug.pipe`` plus
mutations of the textbook examples (so the tests have a deadlock, a data race, a misuse
and an exit bug even before the bug catalogue is complete).  Results are cached per
test session."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from pipeproof.api import CheckResult, check_file, check_source

ROOT = Path(__file__).resolve().parent.parent
TEXTBOOK = ROOT / "examples" / "textbook"
BUGS = ROOT / "examples" / "bugs"


def _mutate(name: str, old: str, new: str) -> str:
    src = (TEXTBOOK / name).read_text()
    assert old in src, f"mutation no longer applies to {name}: {old!r}"
    return src.replace(old, new, 1)


#: name -> (source, expected property)
MUTANTS: dict[str, tuple[str, str]] = {
    "tma_async-no-release": (_mutate("pipeline_tma_async.pipe", "            handle.release()\n",
                                     ""), "deadlock"),
    "async-no-wait": (_mutate("pipeline_async.pipe", "            pipe.consumer_wait(state)\n",
                              ""), "read-before-full"),
    "async-no-acquire": (_mutate("pipeline_async.pipe",
                                 "            pipe.producer_acquire(state)\n", ""),
                         "phase-overrun"),
    "tma_umma-no-tail": (_mutate("pipeline_tma_umma.pipe", "        producer.tail()\n", ""),
                         "dangling-arrive-at-exit"),
}


STARVATION = """\
@cute.kernel
def starve(stages: int = 1):
    launch(block=64, cluster=(1, 1, 1))
    pipe = PipelineAsync.create(
        num_stages=stages,
        producer_group=CooperativeGroup(Agent.Thread, 32),
        consumer_group=CooperativeGroup(Agent.Thread, 32),
    )
    with role("producer", warps=[0]):
        state = make_pipeline_state(PipelineUserType.Producer, stages)
        pipe.producer_acquire(state)
    with role("consumer", warps=[1]):
        state = make_pipeline_state(PipelineUserType.Consumer, stages)
        done = pipe.consumer_try_wait(state)
        while not done:
            done = pipe.consumer_try_wait(state)
"""
MUTANTS["try_wait-spin-starves"] = (STARVATION, "starvation")


def bug_files() -> list[Path]:
    return sorted(BUGS.glob("*-bug.pipe"))


#: bug examples cheap enough for the default run; the others are marked ``slow`` (their
#: checks take from seconds to minutes on this 2-core machine)
FAST_BUGS = ("p1-bug.pipe",)


def case_ids() -> list[str]:
    return list(MUTANTS) + [f"bugs/{p.name}" for p in bug_files()]


def case_params() -> list:
    """The cases as pytest parameters: mutants and FAST_BUGS plain, other bugs ``slow``."""
    out = [pytest.param(c, id=c) for c in MUTANTS]
    for p in bug_files():
        marks = () if p.name in FAST_BUGS else (pytest.mark.slow,)
        out.append(pytest.param(f"bugs/{p.name}", id=f"bugs/{p.name}", marks=marks))
    return out


@functools.lru_cache(maxsize=None)
def result_of(case: str) -> CheckResult:
    kw: dict[str, Any] = {"max_states": 3_000_000, "timeout": 900.0, "engine": "explicit"}
    if case in MUTANTS:
        return check_source(MUTANTS[case][0], filename=f"<{case}>", **kw)
    return check_file(ROOT / "examples" / case, **kw)


def expected_prop(case: str) -> str:
    if case in MUTANTS:
        return MUTANTS[case][1]
    for line in (ROOT / "examples" / case).read_text().splitlines():
        if line.startswith("# expect: VIOLATED"):
            return line.split()[-1]
    return ""


def source_of(case: str) -> str:
    if case in MUTANTS:
        return MUTANTS[case][0]
    return (ROOT / "examples" / case).read_text()


def agents_of(result: CheckResult) -> set[str]:
    """The agents a counterexample involves: every actor plus every stuck warp."""
    tr = result.verdict.trace
    assert tr is not None
    names = {e.actor for e in tr.events}
    names |= {b.split(" ", 1)[0] for b in tr.blocked}
    return names
