"""The library entry points: parse, compile and check a kernel skeleton.

``check_file(path, params)`` and ``check_kernel(kernel_ir, params)`` return a
``CheckResult``: the verdict plus what was checked.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from .checker.trace import render_text
from .checker.verdict import SAFE, UNKNOWN, Verdict
from .model.compile import CompiledKernel, compile_kernel
from .model.errors import CompileTimeout, ConfigError, Unsupported, option
from .model.ir import Kernel
from .model.lang.parser import parse, parse_file
from .model.system import System


@dataclass
class CheckResult:
    verdict: Verdict
    kernel: str
    file: str
    params: dict[str, Any]
    cluster: tuple[int, int, int]
    warps: int
    engine: str
    compiled: Optional[CompiledKernel] = field(default=None, repr=False)
    memory_model: str = "cutlass"

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def status(self) -> str:
        return self.verdict.status

    @property
    def prop(self) -> Optional[str]:
        return self.verdict.prop

    def to_json(self) -> dict[str, Any]:
        d = self.verdict.to_json()
        d.update({"kernel": self.kernel, "file": self.file, "params": self.params,
                  "cluster": list(self.cluster), "warps_per_cta": self.warps,
                  "engine": self.engine, "memory_model": self.memory_model})
        return d

    def render_text(self, explain: bool = False, fmt: str = "steps",
                    width: Optional[int] = None) -> str:
        """The verdict in words; a counterexample as numbered steps (``fmt="steps"``)
        or as a timeline with one column per agent (``fmt="timeline"``)."""
        v = self.verdict
        ps = ", ".join(f"{k}={x}" for k, x in self.params.items())
        lines = [f"{self.file}: kernel {self.kernel}({ps}), cluster "
                 f"{'x'.join(map(str, self.cluster))}, {self.warps} warps per CTA"
                 + (f", memory model {self.memory_model}"
                    if self.memory_model != "cutlass" else "")]
        lines.append(v.headline())
        st = v.stats
        if st.states:
            lines.append(f"  engine {st.engine}: {st.states:,} states, {st.transitions:,} "
                         f"transitions, {st.seconds:.2f} s")
        elif st.engine == "bmc" and st.extra.get("bmc_steps"):
            what = {"PROVEN": f"every run ends within {v.depth} levels",
                    "VIOLATED": f"counterexample of {v.depth} steps"}.get(
                        v.status, f"{v.depth} levels")
            mode = {"chain": "chained steps"}.get(st.extra["bmc_steps"], "single steps")
            n_inv = st.extra.get("invariants", {}).get("proven", 0)
            inv = f", {n_inv} proven invariants" if n_inv else ""
            n_cert = st.extra.get("certificate", {}).get("states", 0)
            up_to = ""
            if n_cert:
                cert = st.extra["certificate"]
                up_to = (" up to interchangeable warps "
                         + ", ".join("{" + ",".join(f"w{a}" for a in g) + "}"
                                     for g in cert.get("symmetry", []))
                         if cert.get("symmetry") else "")
                inv = (f", invariant: the {n_cert:,} reachable states{up_to} (certified "
                       "inductive for the encoding)")
                red = cert.get("reduced")
                if red:
                    inv = (f", the {n_cert:,} states{up_to} reached following one warp's "
                           f"step alone at its {red['safe_points']} safe program points "
                           f"(proven by z3: {red['safe_queries']} queries under "
                           f"{red['invariants']} proven invariants)")
            if n_cert and st.extra["certificate"].get("problem_free"):
                what = ("no reachable state violates or deadlocks, at any depth"
                        + (f"; no starvation lasso of up to {v.depth} steps"
                           if v.status == "SAFE" else "")
                        + ("; no fair cycle of the certified state graph starves a warp"
                           if st.extra.get("starvation_free") else "")
                        + (f"; a starvation lasso of {v.depth} steps"
                           if v.prop == "starvation" else ""))
                lines.append(f"  engine bmc (certificate): {what}, {st.seconds:.2f} s{inv}")
            elif st.extra.get("counterexample_from") == "certificate":
                lines.append(f"  engine bmc (certificate): shortest counterexample of "
                             f"{v.depth} steps, {st.seconds:.2f} s, by breadth-first search "
                             f"of the encoding's steps over the {n_cert:,} certified "
                             f"reachable states{up_to}")
            else:
                lines.append(f"  engine bmc ({mode}): {what}, {st.seconds:.2f} s{inv}")
                note = st.extra.get("certificate", {}).get("note")
                if note and v.status in ("SAFE", "UNKNOWN"):
                    lines.append(f"  (no certificate: {note})")
        lines.extend(_parameter_lines(st.extra))
        for t in st.extra.get("auto", ()):
            # --engine auto: what the earlier stages answered
            lines.append(f"  (auto: {t['stage']} undecided after {t['seconds']:.1f} s: "
                         f"{t['reason']})")
        if v.status == "UNKNOWN" and "dsl_version" in st.extra and st.extra.get(
                "data_races", True):
            lines.append(f"  ({option('data_races', 'off')} checks the barrier protocol "
                         "alone, without the shared-memory accesses: far fewer states)")
        for note in st.extra.get("lift_notes", ()):
            lines.append(f"  note: {note}")
        cc = st.extra.get("cross_check")
        if cc is not None:  # --cross-check (frontend/cute/crosscheck.py)
            lines.append(f"  cross-check with model/pipelines: {cc['compared']} pipeline "
                         f"call(s) compared, {len(cc['findings'])} finding(s)")
            for f in cc["findings"]:
                lines.append(f"  finding: {f}")
            for s in cc["not_compared"]:
                lines.append(f"  not compared: {s}")
        if self.engine == "bmc" and v.status == "UNKNOWN":
            # the user chose the unrolling; say where an unbounded answer may come from
            lines.append(f"  ({option('engine', 'explicit')}, or the default "
                         f"{option('engine', 'auto')}, may decide it: the explicit engine's "
                         "partial-order reduction reaches the end of runs that the "
                         "unrolling does not)")
        unsupported = (v.reason or "").startswith("unsupported")
        if v.status == "UNKNOWN" and self.engine != "swarm" and not unsupported:
            # a bug deeper than the search reached can still be found by random runs; where
            # the default engine made every run --engine swarm would, another seed
            seed = option("seed")
            seed = f"{seed} N" if seed.startswith("--") else f"{seed}=N"
            other = (f" {seed}, with a seed other than this check's,"
                     if _ran_every_random_run(st.extra) else "")
            lines.append(f"  ({option('engine', 'swarm')}{other} looks for violations "
                         "deeper than a search reaches, by random runs; it proves nothing)")
        if v.status == "VIOLATED" and v.trace is not None:
            lines.append(f"  {v.reason}")
            note = shortest_note(v)
            if note:
                lines.append(f"  ({note})")
            lines.append("")
            lines.append(f"Counterexample ({len(v.trace)} steps):")
            if fmt == "timeline":
                from .checker.render.timeline import render_timeline

                lines.append(render_timeline(v.trace, width).rstrip("\n"))
            else:
                lines.append(render_text(v.trace))
            if explain:
                from .checker.explain import explain as _explain

                import textwrap

                lines.append("")
                lines.extend(textwrap.wrap(_explain(v), max(60, width or 100)))
        elif v.status == SAFE and st.engine == "bmc" and st.extra.get("bmc_steps") == "chain":
            lines.append(f"  bmc: {v.depth} levels of chained steps -- no counterexample in "
                         f"any run of up to {v.depth} steps, nor in any longer run whose "
                         f"normal form has at most {v.depth} levels")
        elif v.status == UNKNOWN and v.reason:
            pass
        return "\n".join(lines)



def _ran_every_random_run(extra: dict) -> bool:
    """Did the default engine's random runs (an ``auto`` stage) make all the runs that
    ``--engine swarm`` with the same seed would make?"""
    from .checker.swarm import RUNS

    done = f"no violation or deadlock in {RUNS} random runs"
    return any(t["stage"] == "swarm" and t["reason"].startswith(done)
               for t in extra.get("auto", ()))


def _skip_confirm() -> str:
    """How the caller skips the confirming search: a flag on the command line, the
    keyword argument in Python (which has no ``no_confirm``)."""
    flag = option("no_confirm")
    return flag if flag.startswith("--") else option("confirm_timeout", 0)

def shortest_note(v: Verdict) -> str:
    """What is known of a counterexample's length when it may not be a shortest one
    ("" when it is: breadth-first, certified, or confirmed by the search without the
    reduction that found it)."""
    st = v.stats
    if st.engine == "swarm":
        return (f"found by a random run of {st.extra.get('reduced_length', v.depth)} steps, "
                f"{v.depth} once the steps it does not need are dropped; a shorter "
                "counterexample may exist: "
                f"{option('engine', 'explicit')} finds a shortest one where its search "
                "gets that deep")
    how = ("found with chained steps" if st.engine == "bmc"
           else "found with partial-order reduction")
    search = "single-step search" if st.engine == "bmc" else "unreduced search"
    if "confirming" in st.extra:
        return (f"{how}; now proving that no counterexample is shorter, for up to "
                f"{st.extra['confirming']:.0f} s ({_skip_confirm()} skips this)")
    if st.extra.get("confirm_skipped"):
        return (f"{how} and not confirmed shortest ({_skip_confirm()}): "
                "a shorter counterexample may exist")
    if st.extra.get("shortest") is not False:
        return ""
    if st.engine == "bmc":
        return (f"{how}; a shorter counterexample may exist: the {search} for one stopped "
                f"after {st.extra.get('confirm_seconds', 0):.0f} s, with none of up to "
                f"{st.extra.get('confirm_depth', 0)} steps; raise {option('confirm_timeout')} to "
                "finish it")
    return (f"{how}; a shorter counterexample may exist: the {search} for one stopped "
            f"after {st.extra.get('confirm_seconds', 0):.0f} s, "
            f"{st.extra.get('confirm_states', 0):,} states; raise {option('confirm_timeout')} to "
            "finish it")


def _parameter_lines(extra: dict[str, Any]) -> list[str]:
    """How a parameter range was checked: symbolic (the values each run's verdict
    covers) and value by value (why)."""
    out = []
    groups = extra.get("parameter_groups")
    if groups:
        sym = ", ".join(extra.get("symbolic_parameters", ()))
        runs = extra.get("symbolic_runs", 1)
        n = extra.get("parameter_values_checked", 0)
        out.append(f"  symbolic parameter{'s' if ',' in sym else ''} {sym}: "
                   f"{n} value{'s' if n != 1 else ''} in "
                   + ("one run" if runs == 1 else f"{runs} runs"))
        if len(groups) > 1:
            w = max(len(g["values"]) for g in groups)
            for g in groups:
                note = ""
                if g["status"] == "VIOLATED":
                    note = f" ({g['steps']} steps" + (", shown below)" if g["shown"] else ")")
                out.append(f"    {g['values']:<{w}}  {g['headline']}{note}")
    elif extra.get("symbolic_parameters"):
        sym = extra["symbolic_parameters"]
        out.append(f"  symbolic parameter{'s' if len(sym) > 1 else ''} {', '.join(sym)}: "
                   "every value in each check")
    for k, why in extra.get("parameters_by_value", {}).items():
        out.append(f"  {k} checked value by value: {why}")
    return out


def compile_file(path: str | Path, params: Optional[dict[str, Any]] = None) -> CompiledKernel:
    return compile_kernel(parse_file(path), params or {})


def check_kernel(kernel: Kernel, params: Optional[dict[str, Any]] = None, *,
                 engine: str = "auto", depth: Optional[int] = None,
                 timeout: float = 600.0, max_states: int = 3_000_000,
                 progress: Optional[Callable[[int, int, float], None]] = None,
                 file: str = "", reduce: bool = True, por: Optional[bool] = None,
                 smt2: Optional[str] = None,
                 confirm_timeout: Optional[float] = None,
                 memory_model: str = "cutlass", bmc_steps: str = "auto",
                 bmc_certificate: bool = True, jobs: Optional[int] = None,
                 symbolic_params: bool = True,
                 on_found: Optional[Callable[["CheckResult"], None]] = None,
                 dask: Any = None, seed: int = 0) -> CheckResult:
    """``engine``: ``auto`` (default: BMC's certificate, else the explicit engine, else
    BMC's unrolling, ``checker/portfolio.py``; plain BMC with ``smt2`` or without the
    certificate), ``bmc``, ``explicit`` or ``native`` (the explicit engine's search in C,
    ``checker/native/``: ``reduce`` turns its warp and CTA symmetry on, and ``por`` its
    stubborn sets, None as for the explicit engine: clusters of more than one CTA and CTAs
    of 10 or more warps).  ``confirm_timeout``: seconds for the search that confirms a counterexample found
    with a reduction (explicit engine: partial-order reduction; BMC: chained steps) is a
    shortest one (default 20).  ``memory_model="strict"`` adds the
    ``insufficient-scope`` check of release scopes (``model.system.System``).
    ``bmc_steps``: ``chain`` (a BMC level is a chain of steps in normal form,
    ``checker/chain.py``), ``single`` (one step per level) or ``auto`` (chains unless
    some warp loops for ever).  ``bmc_certificate``: let BMC prove by a certified
    enumeration of the reachable states where that finishes (``checker/certificate.py``).
    ``jobs``: auto only; 1 runs its stages one after another, 2 races the explicit engine
    against BMC's certificate in a forked process (default: 2 where two CPUs are usable;
    the verdict is the same either way, ``checker/portfolio.py``).
    ``symbolic_params``: a parameter given as a range (``--param K=LO..HI``) is left
    symbolic unless the launch depends on it (``_check_symbolic``); False checks every
    value on its own.  ``on_found``: called with a first counterexample as soon as it is
    found, while a search still confirms that it is a shortest one (the result says
    whether it was, or gives a shorter one); not for parameter ranges.
    ``dask``: a Dask scheduler address (``tcp://host:8786``), ``local`` / ``local:N``
    (a ``LocalCluster`` of worker processes) or a ``distributed.Client``: every value of
    a parameter range is one Dask task (each value on its own, never symbolic), and one
    configuration is searched by the explicit engine's search partitioned over the
    workers (``checker/distributed.py``; engines ``auto`` and ``explicit``).
    ``seed``: of the random runs (``swarm``, and those of ``auto``, ``checker/swarm.py``):
    another seed makes other runs."""
    params = dict(params or {})
    _check_limits(params, depth, timeout, max_states, confirm_timeout)
    if dask is not None:
        if smt2:
            raise ConfigError(f"{option('smt2')} and {option('dask')} exclude each other "
                              "(the query would be written on a worker)")
        if engine not in ("auto", "explicit") and not any(
                isinstance(v, range) for v in params.values()):
            raise ConfigError(f"{option('dask')} searches one configuration with the "
                              f"explicit engine's search; {option('engine', engine)} runs "
                              "in one process (a --param range runs one task per value "
                              "with any engine)")
    if isinstance(dask, str):
        client = _dask_connect(dask)
        try:
            return check_kernel(kernel, params, engine=engine, depth=depth, timeout=timeout,
                                max_states=max_states, progress=progress, file=file,
                                reduce=reduce, por=por, smt2=smt2,
                                confirm_timeout=confirm_timeout, memory_model=memory_model,
                                bmc_steps=bmc_steps, bmc_certificate=bmc_certificate,
                                jobs=jobs, symbolic_params=symbolic_params,
                                on_found=on_found, dask=client, seed=seed)
        finally:
            from .checker.distributed import close

            close(client)
    if dask is not None:
        symbolic_params = False  # each value of a range is one task
    if smt2 and engine in ("explicit", "native", "swarm"):
        raise ConfigError(f"{option('smt2')} writes BMC's query; the {engine} engine has "
                          f"none (use {option('engine', 'bmc')})")
    kw = dict(engine=engine, depth=depth, timeout=timeout, max_states=max_states,
              progress=progress, file=file, reduce=reduce, por=por, smt2=smt2,
              confirm_timeout=confirm_timeout, memory_model=memory_model,
              bmc_steps=bmc_steps, bmc_certificate=bmc_certificate, jobs=jobs,
              symbolic_params=symbolic_params, dask=dask, seed=seed)
    if any(isinstance(v, range) for v in params.values()):
        result = _check_param_ranges(kernel, params, **kw)  # no first answer: several runs
    else:
        start = time.monotonic()
        compiled = compile_kernel(kernel, params, timeout=timeout)
        info = compiled.info
        before = _mtime(smt2)
        # the search gets what compiling left of --timeout (at least a moment, so that
        # it can say how far it got)
        kw["timeout"] = max(timeout - (time.monotonic() - start), 0.01)
        verdict = _run_engine(System(compiled, memory_model),
                              on_found=_first_answer(on_found, compiled, file or kernel.loc.file,
                                                     engine, memory_model), **kw)
        _stamp_smt2(smt2, before, info.name, dict(info.params), file or kernel.loc.file,
                    verdict)
        result = CheckResult(verdict, info.name, file or kernel.loc.file,
                             dict(info.params), info.cluster_shape, info.num_warps, engine,
                             compiled, memory_model)
    return result


def _first_answer(on_found: Optional[Callable[[CheckResult], None]],
                  compiled: CompiledKernel, source: str, engine: str, memory_model: str
                  ) -> Optional[Callable[[Verdict], None]]:
    """The engines' ``on_found`` (a verdict) as the caller's (a ``CheckResult``)."""
    if on_found is None:
        return None
    info = compiled.info

    def found(v: Verdict) -> None:
        on_found(CheckResult(v, info.name, source, dict(info.params), info.cluster_shape,
                             info.num_warps, engine, compiled, memory_model))
    return found


def _stamp_smt2(smt2: Optional[str], before: Optional[int], kernel: str,
                params: dict[str, Any], source: str, verdict: Verdict) -> None:
    """Stamp the ``--smt2`` file that the run which gave ``verdict`` wrote, so that
    ``pipeproof recheck`` can compare (``proofs/recheck.py``), and note it in the
    verdict; nothing where that run wrote none (``before``: the file's time before it)."""
    if not smt2 or _mtime(smt2) in (None, before):
        return
    from .version import __version__
    from .proofs.recheck import stamp

    stamp(smt2, version=__version__, kernel=kernel, params=params, source=source,
          headline=verdict.headline(), expect=verdict.stats.extra.get("smt2_expect", "none"))
    verdict.stats.extra["smt2"] = smt2


def _mtime(path: Optional[str]) -> Optional[int]:
    """The file's modification time (ns), None when there is none."""
    try:
        return os.stat(path).st_mtime_ns if path else None
    except OSError:
        return None


def _check_limits(params: dict[str, Any], depth: Optional[int], timeout: float,
                  max_states: int, confirm_timeout: Optional[float]) -> None:
    """Limits no search can run under, and empty parameter ranges: ConfigError (exit
    code 2), not a verdict."""
    if depth is not None and depth < 0:
        raise ConfigError(f"{option('depth')} must be at least 0, not {depth}")
    if not timeout > 0:
        raise ConfigError(f"{option('timeout')} must be a positive number of seconds, not "
                          f"{timeout:g}")
    if max_states < 1:
        raise ConfigError(f"{option('max_states')} must be at least 1, not {max_states}")
    if confirm_timeout is not None and not confirm_timeout >= 0:
        raise ConfigError(f"{option('confirm_timeout')} must be at least 0, not "
                          f"{confirm_timeout:g}")
    for k, v in params.items():
        if isinstance(v, range) and not v:
            raise ConfigError(f"parameter {k}: the range {v.start}..{v.stop - 1} is empty")


def _run_engine(system: System, *, engine: str, depth: Optional[int], timeout: float,
                max_states: int, progress: Optional[Callable[[int, int, float], None]],
                reduce: bool, por: Optional[bool], smt2: Optional[str],
                confirm_timeout: Optional[float], bmc_steps: str, bmc_certificate: bool,
                jobs: Optional[int], on_found: Optional[Callable[[Verdict], None]] = None,
                dask: Any = None, seed: int = 0, **_: Any) -> Verdict:
    """The verdict of ``engine`` on ``system`` (``check_kernel``'s options; ``dask``: a
    ``distributed.Client``)."""
    if dask is not None and engine in ("auto", "explicit"):
        from .checker.distributed import DaskUnavailable, check_distributed

        try:
            verdict = check_distributed(system, client=dask, max_states=max_states,
                                        timeout=timeout, progress=progress, reduce=reduce,
                                        por=por, **({} if confirm_timeout is None
                                                    else {"confirm_timeout": confirm_timeout}))
        except DaskUnavailable as e:
            raise ConfigError(str(e)) from None
    elif engine == "auto" and smt2 is None and bmc_certificate:
        from .checker.portfolio import check_auto

        verdict = check_auto(system, depth,  # None: BMC's default, imported if BMC runs
                             timeout=timeout, max_states=max_states, progress=progress,
                             reduce=reduce, por=por, bmc_steps=bmc_steps,
                             confirm_timeout=confirm_timeout, jobs=jobs, on_found=on_found,
                             seed=seed)
    elif engine == "explicit":
        from .checker.explicit import check_explicit

        verdict = check_explicit(system, max_states=max_states, timeout=timeout,
                                 progress=progress, reduce=reduce, por=por, on_found=on_found,
                                 **({} if confirm_timeout is None
                                    else {"confirm_timeout": confirm_timeout}))
    elif engine == "native":
        from .checker.explicit import por_auto
        from .checker.native.search import NativeUnavailable, check_native

        try:
            # the stubborn sets as the explicit engine uses them (--por, auto by default)
            verdict = check_native(system, max_states=max_states, timeout=timeout,
                                   progress=progress, symmetry=reduce,
                                   por=reduce and (por_auto(system) if por is None else por))
        except NativeUnavailable as e:
            raise ConfigError(str(e)) from None
    elif engine == "swarm":
        from .checker.swarm import check_swarm

        verdict = check_swarm(system, timeout=timeout, progress=progress, seed=seed)
    elif engine in ("bmc", "auto"):  # auto with --smt2 or without the certificate: BMC
        from .checker.bmc import DEFAULT_DEPTH, check_bmc

        verdict = check_bmc(system, depth=DEFAULT_DEPTH if depth is None else depth,
                            timeout=timeout, smt2=smt2, steps=bmc_steps,
                            certificate=bmc_certificate, on_found=on_found,
                            **({} if confirm_timeout is None
                               else {"confirm_timeout": confirm_timeout}),
                            progress=((lambda d, n, t, **k: progress(0, d, t, **k))
                                      if progress else None))
    else:
        raise ConfigError(f"unknown engine {engine!r}")
    if not verdict.stats.peak_mb:
        verdict.stats.peak_mb = peak_rss_mb()
    return verdict


def peak_rss_mb() -> float:
    """Peak resident memory of this process and of its finished worker processes (MB;
    ``getrusage``, Linux reports KiB); 0.0 where the platform does not say."""
    try:
        import resource

        kib = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    except (ImportError, OSError, ValueError):
        return 0.0
    scale = 1024.0 * 1024.0 if sys.platform == "darwin" else 1024.0  # macOS: bytes
    return kib / scale


def _check_param_ranges(kernel: Kernel, params: dict[str, Any], **kw: Any) -> CheckResult:
    """``--param K=LO..HI``: check every value of every range (their product), sharing
    the time budget.  Trip counts and stage counts are compiled by unrolling, so each
    value is its own transition system; the first violation in the order of the values
    is reported with its values, an UNKNOWN for any value makes the whole answer
    UNKNOWN, and SAFE holds to the smallest depth reached.  With ``jobs`` of 2 or more
    (default: ``portfolio.default_jobs()``) the values are checked by that many forked
    processes, each running its value's check alone; the answer is the one the
    one-by-one order gives."""
    import itertools

    from .checker.portfolio import default_jobs
    from .checker.verdict import VIOLATED

    names = [k for k, v in params.items() if isinstance(v, range)]
    # --timeout covers the trial compilations too (stages=1..256: a minute of them)
    t_end = time.perf_counter() + kw["timeout"]
    sym, by_value = _symbolic_names(kernel, params, names, t_end) \
        if kw["symbolic_params"] else ([], {})
    kw = dict(kw, timeout=max(t_end - time.perf_counter(), 0.01))
    if sym and len(sym) == len(names):
        return _check_symbolic(kernel, params, sym, **kw)
    names = [k for k in names if k not in sym]  # the others stay ranges: symbolic
    combos = [dict(params, **dict(zip(names, values)))
              for values in itertools.product(*[params[k] for k in names])]
    jobs = default_jobs() if kw.get("jobs") is None else kw["jobs"]
    if kw.get("dask") is not None:  # one task per value, as many at once as workers
        jobs = max(len(kw["dask"].scheduler_info().get("workers", {})), 1)
    results: list[CheckResult] = []
    with contextlib.closing(_value_results(kernel, combos, kw, t_end, jobs)) as each:
        for r in each:
            if r is None:  # out of time before this value
                one = combos[len(results)]
                v = Verdict(UNKNOWN, reason="timeout before " + ", ".join(
                    f"{k}={one[k]}" for k in names) + " was checked")
                last = results[-1] if results else None
                if last is None:
                    raise ConfigError(f"{option('timeout')} too small for a parameter "
                                      "range")
                return CheckResult(v, last.kernel, last.file, one, last.cluster,
                                   last.warps, last.engine, memory_model=last.memory_model)
            results.append(r)
            if r.status == VIOLATED:
                if by_value:
                    r.verdict.stats.extra["parameters_by_value"] = by_value
                _note_smt2(r.verdict, results[0].verdict)
                return r
    last = results[-1]
    shown = dict(last.params)
    shown.update({k: _range_text(params[k]) for k in names + sym})
    v = _combined_verdict(results, names)
    v.stats.extra["parameter_jobs"] = min(jobs, len(combos))
    if by_value:
        v.stats.extra["parameters_by_value"] = by_value
    if sym:
        v.stats.extra["symbolic_parameters"] = sym
    _note_smt2(v, results[0].verdict)
    return CheckResult(v, last.kernel, last.file, shown, last.cluster, last.warps, last.engine,
                       memory_model=last.memory_model)


def _combined_verdict(results: list[CheckResult], names: list[str]) -> Verdict:
    """The answer for a parameter range none of whose values violates: UNKNOWN if some
    value is (saying which), PROVEN if every value is, else SAFE to the smallest depth."""
    from .checker.verdict import PROVEN

    unknown = [r for r in results if r.status == UNKNOWN]
    if unknown:
        u = unknown[0]
        v = Verdict(UNKNOWN, reason=f"{u.verdict.reason} (for " + ", ".join(
            f"{k}={u.params.get(k)}" for k in names) + ")", depth=u.verdict.depth)
    elif all(r.status == PROVEN for r in results):
        v = Verdict(PROVEN, depth=max(r.verdict.depth for r in results), bounded=False)
    else:
        v = Verdict(SAFE, depth=min(r.verdict.depth for r in results if r.status == SAFE),
                    bounded=True)
    v.stats.engine = results[-1].verdict.stats.engine
    v.stats.seconds = sum(r.verdict.stats.seconds for r in results)
    v.stats.extra["parameter_values_checked"] = len(results)
    return v


def _note_smt2(v: Verdict, first: Verdict) -> None:
    """The answer of a parameter range names the file its first value wrote."""
    if "smt2" in first.stats.extra:
        v.stats.extra["smt2"] = first.stats.extra["smt2"]


def _range_text(r: range) -> str:
    return f"{r.start}..{r.stop - 1}"


def _symbolic_names(kernel: Kernel, params: dict[str, Any], names: list[str],
                    t_end: Optional[float] = None) -> tuple[list[str], dict[str, str]]:
    """Which range parameters can stay symbolic: those ``compile_kernel(symbolic=...)``
    accepts (tried one more at a time: not the launch's), and why each other one is
    checked value by value."""
    sym: list[str] = []
    by_value: dict[str, str] = {}
    for k in names:
        trial = sym + [k]
        fixed = {n: (v.start if isinstance(v, range) else v)
                 for n, v in params.items() if n not in trial}
        left = None if t_end is None else max(t_end - time.perf_counter(), 1e-9)
        try:
            compile_kernel(kernel, fixed, symbolic={n: params[n] for n in trial},
                           timeout=left)
        except CompileTimeout:
            raise  # out of time: UNKNOWN, not "checked value by value"
        except (ConfigError, Unsupported) as e:
            by_value[k] = str(e)
            continue
        sym.append(k)
    return sym, by_value


def _check_symbolic(kernel: Kernel, params: dict[str, Any], sym: list[str],
                    **kw: Any) -> CheckResult:
    """``--param K=LO..HI`` with ``K`` symbolic: one transition system covers every value
    (``model.program.ParamSplit``).  A counterexample holds for the values still possible
    at its end; those values are replayed on the kernel compiled for them (a mismatch is
    an internal error), taken out, and the rest checked again, until no violation is
    left or the time is up.  So the answer says which values violate what, and that
    the others are safe."""
    t_end = time.perf_counter() + kw["timeout"]
    fixed = {k: v for k, v in params.items() if k not in sym}
    compiled = compile_kernel(kernel, fixed, symbolic={k: params[k] for k in sym},
                              timeout=kw["timeout"])
    return _symbolic_runs(compiled, lambda values: compile_kernel(kernel, values), fixed,
                          {k: params[k] for k in sym}, kw["file"] or kernel.loc.file,
                          t_end, **kw)


def _symbolic_runs(compiled: CompiledKernel, concrete: Callable[[dict], CompiledKernel],
                   fixed: dict[str, Any], ranges: dict[str, range], source: str,
                   t_end: float, **kw: Any) -> CheckResult:
    """The runs of ``_check_symbolic`` on ``compiled`` (symbolic in ``ranges``), for
    any front end: ``concrete(values)`` compiles the kernel for one point (the
    counterexample's replay), ``fixed`` the other parameters."""
    from .checker.verdict import VIOLATED
    from .model.system import describe_points

    sym = list(ranges)
    info = compiled.info
    names, points = compiled.param_names, compiled.param_points
    left = set(range(len(points)))
    groups: list[tuple[list[int], Verdict]] = []
    runs = 0
    one = dict(kw)
    shown = dict(info.params)
    shown.update({k: _range_text(ranges[k]) for k in sym})
    while left:
        budget = t_end - time.perf_counter()
        if budget <= 0:
            groups.append((sorted(left), Verdict(UNKNOWN, reason="timeout before these "
                                                 "values were checked")))
            break
        runs += 1
        system = System(compiled, kw["memory_model"], param_init=left)
        before = _mtime(one["smt2"])
        v = _run_engine(system, **dict(one, timeout=budget))
        _stamp_smt2(one["smt2"], before, info.name, shown, source, v)
        one["smt2"] = None  # the exported query is the first one: every value
        if v.status != VIOLATED or v.trace is None:
            groups.append((sorted(left), v))
            break
        got = _violating_points(concrete, fixed, system, v, kw["memory_model"])
        groups.append((got, v))
        left -= set(got)
    first = next((v for _, v in groups if v.status == VIOLATED), groups[0][1])
    text = lambda pts: describe_points(names, [points[i] for i in pts])  # noqa: E731
    first.stats.extra["symbolic_parameters"] = list(sym)
    first.stats.extra["parameter_values_checked"] = sum(len(p) for p, _ in groups[:runs])
    first.stats.extra["symbolic_runs"] = runs
    first.stats.extra["parameter_groups"] = [
        {"values": text(p), "status": v.status, "property": v.prop,
         "steps": len(v.trace) if v.status == VIOLATED and v.trace is not None else None,
         "headline": v.headline(), "shown": v is first and v.status == VIOLATED}
        for p, v in groups]
    if first.status != VIOLATED and len(groups) > 1:  # pragma: no cover - defensive
        raise AssertionError("symbolic parameter groups without a violation")
    return CheckResult(first, info.name, source, shown,
                       info.cluster_shape, info.num_warps, kw["engine"], compiled,
                       kw["memory_model"])


def _violating_points(concrete: Callable[[dict], CompiledKernel], fixed: dict[str, Any],
                      system: System, v: Verdict, memory_model: str) -> list[int]:
    """The parameter points a symbolic counterexample holds for (those still possible
    at its end), after replaying it on the kernel compiled for the smallest, the largest
    and a middle one of them, without its ``ParamSplit`` steps: every step enabled, the
    same violation at the end (a deadlock, or a fair lasso that starves a warp)."""
    from .checker.concrete import ConcreteRunner
    from .checker.errors import InternalError
    from .checker.lasso import report_lasso
    from .model.program import Nop, ParamSplit

    trace = v.trace
    assert trace is not None
    states, _ = ConcreteRunner(system).run(trace.steps)
    got = [i for i, b in enumerate(system.param_bits) if states[-1][b] == 1]
    if not got:
        raise InternalError("a symbolic counterexample holds for no parameter value")
    def executes(i: int, cls: type) -> bool:
        st = trace.steps[i]
        return st[0] == "a" and isinstance(
            system.code(st[1])[states[i][system.agents[st[1]].pc]], cls)

    kept = [i for i in range(len(trace.steps)) if not executes(i, ParamSplit)]
    # a shared-memory access after a split is a step of its own (frontend/cute: the
    # lifter's window after the split), which the program of one value may have
    # merged into the synchronisation before it: optional in the replay
    optional = {n for n, i in enumerate(kept) if executes(i, Nop)}
    names = system.param_names
    for i in sorted({got[0], got[len(got) // 2], got[-1]}):
        values = dict(fixed, **dict(zip(names, system.param_points[i])))
        csys = System(concrete(values), memory_model)
        run = ConcreteRunner(csys)
        where = ", ".join(f"{k}={values[k]}" for k in names)
        try:
            steps, used = _concrete_steps(system, csys, run, [trace.steps[j] for j in kept],
                                          optional)
            if trace.loop_start is not None:
                ell = sum(1 for n in used if kept[n] < trace.loop_start - 1)
                report_lasso(csys, run, steps, ell)
                continue
            cstates, viol = run.run(steps)
        except InternalError as e:
            raise InternalError(f"the symbolic counterexample does not replay for {where}: "
                                f"{e}") from e
        if v.prop == "deadlock":
            ok = viol is None and not csys.all_done(cstates[-1]) and \
                not any(True for _ in run.successors(cstates[-1]))
        else:
            ok = viol is not None and viol[0] == v.prop
        if not ok:
            raise InternalError(f"the symbolic counterexample does not end in {v.prop} "
                                f"for {where}")
    return got


def _concrete_steps(system: System, csys: System, run: Any, steps: list[tuple],
                    optional: frozenset | set = frozenset()
                    ) -> tuple[list[tuple], list[int]]:
    """The step ids of ``steps`` (of the symbolic system, without its parameter splits)
    in the system compiled for one value, and which of ``steps`` they stand for.
    Warps keep their index; an environment step names the pc of the instruction that
    started it, which differs between the two programs: a TMA delivery is matched by its
    warp, delivery, outcome and instruction, a queue's head by its warp.  A step in
    ``optional`` (a ghost-only ``Nop``) is left out where the warp's instruction there
    is not a ``Nop``.  Raises ``InternalError`` where a step is not enabled."""
    from .checker.errors import InternalError
    from .model.program import Nop

    cur = run.initial
    out: list[tuple] = []
    used: list[int] = []
    for n, st in enumerate(steps, 1):
        if n - 1 in optional:
            a = st[1]
            if not isinstance(csys.code(a)[cur[csys.agents[a].pc]], Nop):
                continue
        if st[0] == "e":
            item = st[1]
            if item[0] == "tma":
                ins = system.code(item[1])[item[2]]
                cands = [it for it in csys.env_items(cur) if it[0] == "tma"
                         and it[1] == item[1] and it[3:] == item[3:]
                         and csys.code(it[1])[it[2]] == ins]
            else:
                cands = [it for it in csys.env_items(cur) if it[:2] == item[:2]]
            if not cands:
                raise InternalError(f"step {n} ({st}) has no counterpart")
            st = ("e", cands[0])
        r = run.step(cur, st)
        if r is None:
            raise InternalError(f"step {n} ({st}) is not enabled")
        cur = r[0]
        out.append(st)
        used.append(n - 1)
    return out, used


#: what the forked workers of ``_value_results`` check (set before the fork)
_RANGE_JOB: Optional[tuple] = None


def _check_combo(kernel: Kernel, combo: dict, kw: dict, t_end: float
                 ) -> Optional[CheckResult]:
    """One parameter combination with the time left before ``t_end`` (None: none)."""
    left = t_end - time.perf_counter()
    return None if left <= 0 else check_kernel(kernel, combo, **dict(kw, timeout=left))


def _first_writes_smt2(kw: dict, i: int) -> dict:
    """Combination ``i``'s options: only the first exports its query (``--smt2``: one
    file, stamped with that value, and no two workers writing it)."""
    return kw if i == 0 else dict(kw, smt2=None)


def _check_value(i: int) -> Optional[CheckResult]:
    """A forked worker's check of combination ``i`` of ``_RANGE_JOB``."""
    kernel, combos, kw, t_end = _RANGE_JOB  # type: ignore[misc]
    r = _check_combo(kernel, combos[i], _first_writes_smt2(kw, i), t_end)
    return None if r is None else replace(r, compiled=None)  # the parent compiles it


def _value_results(kernel: Kernel, combos: list[dict], kw: dict, t_end: float,
                   jobs: int) -> Iterator[Optional[CheckResult]]:
    """The check of every parameter combination, in order (None: no time left for it),
    by ``jobs`` forked processes when that is more than 1; the caller stops reading at
    the first violation, which ends the workers."""
    global _RANGE_JOB
    if kw.get("dask") is not None:
        yield from _dask_value_results(kernel, combos, kw, t_end)
        return
    if jobs < 2 or len(combos) < 2:
        for i, c in enumerate(combos):
            yield _check_combo(kernel, c, _first_writes_smt2(kw, i), t_end)
        return
    import multiprocessing

    one_kw = dict(kw, jobs=1)
    one_kw.pop("progress", None)  # several searches at once: no single progress line
    _RANGE_JOB = (kernel, combos, one_kw, t_end)
    from .checker.portfolio import die_with_parent

    pool = multiprocessing.get_context("fork").Pool(min(jobs, len(combos)),
                                                    initializer=die_with_parent)
    try:
        for i, r in enumerate(pool.imap(_check_value, range(len(combos)))):
            if r is not None:
                c = combos[i]
                r = replace(r, compiled=compile_kernel(
                    kernel, {k: v for k, v in c.items() if not isinstance(v, range)},
                    symbolic={k: v for k, v in c.items() if isinstance(v, range)}))
            yield r
    finally:
        pool.terminate()
        pool.join()
        _RANGE_JOB = None


def _dask_connect(address: str) -> Any:
    """A Dask client for ``--dask ADDRESS`` (``checker.distributed.connect``); without
    Dask, or with no scheduler there, a ConfigError (exit 2) saying what to do."""
    from .checker.distributed import DaskUnavailable, connect

    try:
        return connect(address)
    except DaskUnavailable as e:
        raise ConfigError(str(e)) from None


def _dask_check_value(kernel: Kernel, combo: dict, kw: dict, wall_end: float
                      ) -> Optional[CheckResult]:
    """A Dask task: one parameter combination, with the time left before ``wall_end``
    (``time.time()``: the clock that means the same on every machine of the cluster,
    unlike ``perf_counter``)."""
    left = wall_end - time.time()
    if left <= 0:
        return None
    r = check_kernel(kernel, combo, **dict(kw, timeout=left))
    return replace(r, compiled=None)  # the client compiles it again if it needs it


def _dask_value_results(kernel: Kernel, combos: list[dict], kw: dict, t_end: float
                        ) -> Iterator[Optional[CheckResult]]:
    """``_value_results`` on Dask: every combination is a task (each one process, one
    engine, ``jobs=1``); results come back in the order of the values, and the tasks
    after the first violation are cancelled."""
    client = kw["dask"]
    one_kw = dict(kw, jobs=1, dask=None, smt2=None)
    one_kw.pop("progress", None)
    wall_end = time.time() + (t_end - time.perf_counter())
    kernel_f = client.scatter(kernel, broadcast=True, hash=False)
    futures = [client.submit(_dask_check_value, kernel_f, c, one_kw, wall_end, pure=False)
               for c in combos]
    try:
        for c, f in zip(combos, futures):
            r = f.result()
            if r is not None:
                r = replace(r, compiled=compile_kernel(kernel, c))
            yield r
    finally:
        client.cancel(futures)


def _dask_check_file(path: str, params: dict[str, Any], kw: dict) -> CheckResult:
    """A Dask task: ``check_file`` in one process, the result without its compiled
    kernel (it is large; the client compiles again where it needs it)."""
    return replace(check_file(path, params, **kw), compiled=None)


def check_many(items: list[tuple[str, Optional[dict[str, Any]]]], dask: Any = None,
               **kw: Any) -> list[CheckResult]:
    """Check several kernels (``(path, params)`` each), every one a Dask task when
    ``dask`` is given (an address, ``local``, ``local:N`` or a ``distributed.Client``),
    one after another in this process otherwise; the results in the order of ``items``.
    ``kw``: ``check_file``'s options; each task runs with ``jobs=1``."""
    if dask is None:
        return [check_file(path, params, **kw) for path, params in items]
    client = _dask_connect(dask) if isinstance(dask, str) else dask
    try:
        one = dict(kw, jobs=1)
        one.pop("progress", None)
        one.pop("on_found", None)
        futures = [client.submit(_dask_check_file, str(path), dict(params or {}), one,
                                 pure=False) for path, params in items]
        return [f.result() for f in futures]
    finally:
        if isinstance(dask, str):
            from .checker.distributed import close

            close(client)


def check_file(path: str | Path, params: Optional[dict[str, Any]] = None, **kw: Any) -> CheckResult:
    kernel = parse_file(path)
    return check_kernel(kernel, params, file=str(path), **kw)


def check_source(text: str, params: Optional[dict[str, Any]] = None, filename: str = "<string>",
                 **kw: Any) -> CheckResult:
    return check_kernel(parse(text, filename), params, file=filename, **kw)


def check_compiled(compiled: CompiledKernel, *, engine: str = "auto",
                   depth: Optional[int] = None, timeout: float = 600.0,
                   max_states: int = 3_000_000,
                   progress: Optional[Callable[[int, int, float], None]] = None,
                   file: str = "", reduce: bool = True, por: Optional[bool] = None,
                   smt2: Optional[str] = None, confirm_timeout: Optional[float] = None,
                   memory_model: str = "cutlass", bmc_steps: str = "auto",
                   bmc_certificate: bool = True, jobs: Optional[int] = None,
                   on_found: Optional[Callable[[CheckResult], None]] = None,
                   dask: Any = None, seed: int = 0, **_: Any) -> CheckResult:
    """Check per-warp programs that a front end other than ``.pipe`` produced
    (``on_found``, ``dask``: as ``check_kernel``'s; a range of a CuTe DSL kernel's
    parameters is checked value by value here, each value by the partitioned search)."""
    info = compiled.info
    _check_limits({}, depth, timeout, max_states, confirm_timeout)
    if isinstance(dask, str):
        client = _dask_connect(dask)
        try:
            return check_compiled(compiled, engine=engine, depth=depth, timeout=timeout,
                                  max_states=max_states, progress=progress, file=file,
                                  reduce=reduce, por=por, smt2=smt2,
                                  confirm_timeout=confirm_timeout, memory_model=memory_model,
                                  bmc_steps=bmc_steps, bmc_certificate=bmc_certificate,
                                  jobs=jobs, on_found=on_found, dask=client, seed=seed)
        finally:
            from .checker.distributed import close

            close(client)
    if dask is not None and engine not in ("auto", "explicit"):
        raise ConfigError(f"{option('dask')} searches one configuration with the explicit "
                          f"engine's search; {option('engine', engine)} runs in one process")
    if smt2 and engine in ("explicit", "native", "swarm"):
        raise ConfigError(f"{option('smt2')} writes BMC's query; the {engine} engine has "
                          f"none (use {option('engine', 'bmc')})")
    before = _mtime(smt2)
    source = file or compiled.source_file
    verdict = _run_engine(System(compiled, memory_model), engine=engine, depth=depth,
                          timeout=timeout, max_states=max_states, progress=progress,
                          reduce=reduce, por=por, smt2=smt2,
                          confirm_timeout=confirm_timeout, bmc_steps=bmc_steps,
                          bmc_certificate=bmc_certificate, jobs=jobs, dask=dask, seed=seed,
                          on_found=_first_answer(on_found, compiled, source, engine,
                                                 memory_model))
    _stamp_smt2(smt2, before, info.name, dict(info.params), source, verdict)
    return CheckResult(verdict, info.name, source, dict(info.params), info.cluster_shape,
                       info.num_warps, engine, compiled, memory_model)


def check_cute(entry: Any, params: Optional[dict[str, Any]] = None, *,
               arch: str = "sm_90a", data_races: bool = True, cross_check: bool = False,
               **kw: Any) -> CheckResult:
    """Check a real CuTe DSL kernel (``frontend/cute``).  ``entry`` is
    ``"path/to/kernel.py::fn"`` or the function itself; it calls ``cute.compile`` with
    fake tensors, and ``params`` are its keyword arguments.  A ``range`` value is
    checked value by value (each value is compiled and lifted on its own); the first
    violating value is reported.  ``data_races=False`` checks the barrier protocol
    alone (no ghost buffer effects: far fewer states on large kernels).
    ``cross_check``: also compare every lifted pipeline call with what
    ``model/pipelines/`` makes for it (``frontend/cute/crosscheck.py``); the findings
    are reported with the verdict (``stats.extra["cross_check"]``) and do not change
    it.  ``kw``: the options of ``check_kernel``."""
    from .frontend.cute import lift_entry, lift_function

    if isinstance(kw.get("dask"), str):
        # one cluster for every value of a range
        client = _dask_connect(kw["dask"])
        try:
            return check_cute(entry, params, arch=arch, data_races=data_races,
                              cross_check=cross_check, **dict(kw, dask=client))
        finally:
            from .checker.distributed import close

            close(client)
    params = dict(params or {})
    symbolic_params = kw.pop("symbolic_params", True)
    _check_limits(params, kw.get("depth"), kw.get("timeout", 600.0),
                  kw.get("max_states", 3_000_000), kw.get("confirm_timeout"))

    def one(values: dict[str, Any]) -> CheckResult:
        lifted = (lift_entry(entry, values, arch, data_races, cross_check)
                  if isinstance(entry, str)
                  else lift_function(entry, values, arch, data_races, cross_check))
        r = check_compiled(lifted.compiled, **kw)
        if lifted.crosscheck is not None:
            cc = lifted.crosscheck
            r.verdict.stats.extra["cross_check"] = {
                "compared": cc.compared, "findings": [str(f) for f in cc.findings],
                "not_compared": list(cc.skipped)}
        if lifted.notes:
            r.verdict.stats.extra["lift_notes"] = list(lifted.notes)
        r.verdict.stats.extra["dsl_version"] = lifted.capture.dsl_version
        r.verdict.stats.extra["data_races"] = data_races
        return r

    names = [k for k, v in params.items() if isinstance(v, range)]
    if not names:
        return one(params)
    by_value = "a CuTe DSL kernel is compiled and lifted for each value"
    if symbolic_params:
        got = _cute_symbolic(entry, params, names, arch, data_races, kw)
        if isinstance(got, CheckResult):
            return got
        by_value = got
    kw.pop("on_found", None)  # several runs: no first answer before the last
    import itertools

    from .checker.verdict import VIOLATED

    t_end = time.perf_counter() + kw.get("timeout", 600.0)
    results: list[CheckResult] = []
    for values in itertools.product(*[params[k] for k in names]):
        left = t_end - time.perf_counter()
        combo = dict(params, **dict(zip(names, values)))
        if left <= 0:
            last = results[-1]
            v = Verdict(UNKNOWN, reason="timeout before " + ", ".join(
                f"{k}={combo[k]}" for k in names) + " was checked")
            return CheckResult(v, last.kernel, last.file, combo, last.cluster, last.warps,
                               last.engine, memory_model=last.memory_model)
        r = one(dict(combo)) if not kw.get("timeout") else \
            _with_timeout(one, combo, kw, left)
        results.append(r)
        if r.status == VIOLATED:
            return r
    last = results[-1]
    shown = dict(last.params)
    shown.update({k: _range_text(params[k]) for k in names})
    v = _combined_verdict(results, names)
    v.stats.extra["parameters_by_value"] = {k: by_value for k in names}
    return CheckResult(v, last.kernel, last.file, shown, last.cluster, last.warps,
                       last.engine, memory_model=last.memory_model)


def _cute_symbolic(entry: Any, params: dict[str, Any], names: list[str], arch: str,
                   data_races: bool, kw: dict) -> CheckResult | str:
    """``--param K=LO..HI`` on a CuTe DSL entry whose ``K`` reaches the kernel only as a
    run-time integer argument: the module is captured and lifted once, ``K`` symbolic
    (``frontend/cute/symbolic.py``), and checked as ``_check_symbolic`` checks a
    ``.pipe`` kernel.  Otherwise the reason the range is checked value by value."""
    import inspect

    from .frontend.cute import ScalarParams, lift_text
    from .frontend.cute.capture import prepare_environment
    from .frontend.cute.entry import (compile_entry, effective_params, find_entry,
                                      load_module, parse_spec)
    from .frontend.cute.symbolic import plan

    t_end = time.perf_counter() + kw.get("timeout", 600.0)
    if isinstance(entry, str):
        spec = parse_spec(entry)
        prepare_environment(arch)
        fn, path = find_entry(load_module(spec.path), spec), spec.path
    else:
        prepare_environment(arch)
        fn, path = entry, inspect.getsourcefile(entry) or "<entry>"
    from .frontend.cute.symbolic import (check_extent_names, extent_points, shape_values,
                                         split_params)

    entry_params, extents = split_params(fn, params, path)
    first = {k: (v.start if isinstance(v, range) else v) for k, v in entry_params.items()}
    cap = compile_entry(fn, first, arch, path)[0]
    fixed_extents = {k: v for k, v in extents.items() if not isinstance(v, range)}
    fixed_values = shape_values(cap, fixed_extents, fn, path)
    check_extent_names(cap, extents, fn, path)
    fixed = dict(effective_params(fn, {k: v for k, v in entry_params.items()
                                       if k not in names}), **fixed_values)
    entry_names = [k for k in names if k in entry_params]
    extent_names = [k for k in names if k not in entry_params]
    if entry_names:
        how = plan(fn, entry_params, entry_names, cap.scalars,
                   lambda values: compile_entry(fn, values, arch, path)[0].text, cap.text)
        if how.params is None:
            return how.why
        sp = how.params
    else:
        sp = ScalarParams((), ((),), {})
    sp, extent_notes = extent_points(cap, sp, {k: params[k] for k in extent_names})
    if sp is None:
        return extent_notes[0]
    shown = dict(fixed, **{k: _range_text(params[k]) for k in names})
    try:
        compiled, lf = lift_text(cap.text, fn.__name__, shown, path, cap.dsl_version,
                                 data_races=data_races, scalars=cap.scalars, symbolic=sp,
                                 shapes=cap.shapes, shape_values=fixed_values)
    except Unsupported as e:  # e.g. a split inside a run-time branch: value by value
        return f"the symbolic lift stopped ({str(e).splitlines()[0]})"

    def concrete(values: dict) -> CompiledKernel:
        i = sp.points.index(tuple(values[k] for k in sp.names))
        one = ScalarParams(sp.names, (sp.points[i],), {a: (v[i],) for a, v in sp.args.items()},
                           {a: (v[i],) for a, v in sp.shapes.items()})
        return lift_text(cap.text, fn.__name__, dict(fixed, **values), path,
                         cap.dsl_version, data_races=data_races, scalars=cap.scalars,
                         symbolic=one, shapes=cap.shapes, shape_values=fixed_values)[0]

    run_kw = dict(kw)
    run_kw.pop("on_found", None)
    for k, d in (("file", path), ("smt2", None), ("memory_model", "cutlass"),
                 ("engine", "auto"), ("depth", None), ("max_states", 3_000_000),
                 ("progress", None), ("por", None), ("confirm_timeout", None),
                 ("bmc_steps", "auto"), ("bmc_certificate", True), ("jobs", None),
                 ("reduce", True)):
        run_kw.setdefault(k, d)
    run_kw["timeout"] = max(t_end - time.perf_counter(), 0.01)
    r = _symbolic_runs(compiled, concrete, fixed, {k: params[k] for k in names}, path,
                       t_end, **run_kw)
    extra = r.verdict.stats.extra
    extra["symbolic_arguments"] = {a: names for a in sp.args}
    if sp.shapes:
        extra["symbolic_extents"] = sorted(sp.shapes)
    if lf.notes or extent_notes:
        extra["lift_notes"] = list(extent_notes) + list(lf.notes)
    extra["dsl_version"] = cap.dsl_version
    extra["data_races"] = data_races
    return r


def _with_timeout(one: Callable[[dict], CheckResult], combo: dict, kw: dict,
                  left: float) -> CheckResult:
    saved = kw.get("timeout")
    kw["timeout"] = left
    try:
        return one(dict(combo))
    finally:
        kw["timeout"] = saved
