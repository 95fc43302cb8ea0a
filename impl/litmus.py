"""PTX litmus tests for mbarrier behaviour the PTX ISA leaves open.

Each test is a small kernel (one thread unless said otherwise) that performs a fixed
sequence of mbarrier operations and writes what it observes into a global array of u32
words: ``test_wait.parity`` results, pending counts from the states ``mbarrier.arrive``
returns (``mbarrier.pending_count``), and the raw 64-bit barrier word (``ld.shared.b64``;
the object is opaque, we read it only to document it).  ``impl/gpu_runner.py`` runs each
one ``reps`` times; ``spec/hardware.md`` records the results and what the model does.

Kernel signature: ``(u64 out, u32 rep, u64 timeout_ns)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

WORDS = 4096


class _B:
    """A tiny PTX builder for one litmus kernel."""

    def __init__(self, name: str):
        self.name = name
        self.lines: list[str] = []
        self.n = {"r": 0, "rd": 0, "p": 0}

    def __call__(self, s: str) -> None:
        self.lines.append("\t" + s)

    def reg(self, k: str) -> str:
        self.n[k] += 1
        return f"%{k}{self.n[k]}"

    def out(self, slot: int, reg: str) -> None:
        self(f"st.global.u32 [%out+{4 * slot}], {reg};")

    def out_imm(self, slot: int, v: int) -> None:
        r = self.reg("r")
        self(f"mov.u32 {r}, {v};")
        self.out(slot, r)

    def out64(self, slot: int, reg: str) -> None:
        assert slot % 2 == 0
        self(f"st.global.u64 [%out+{4 * slot}], {reg};")

    def bar(self, i: int) -> str:
        r = self.reg("r")
        self(f"mov.u32 {r}, bars;")
        self(f"add.u32 {r}, {r}, {8 * i};")
        return r

    def raw(self, slot: int, b: str) -> None:
        r = self.reg("rd")
        self(f"ld.volatile.shared.b64 {r}, [{b}];")
        self.out64(slot, r)

    def test(self, slot: int, b: str, parity: int) -> None:
        p, r = self.reg("p"), self.reg("r")
        self(f"mbarrier.test_wait.parity.shared::cta.b64 {p}, [{b}], {parity};")
        self(f"selp.u32 {r}, 1, 0, {p};")
        self.out(slot, r)

    def arrive(self, b: str, count: int = 1, slot: int = -1, tx: int = 0,
               drop: bool = False) -> str:
        s = self.reg("rd")
        op = "arrive_drop" if drop else "arrive"
        if tx:
            self(f"mbarrier.arrive.expect_tx.shared::cta.b64 {s}, [{b}], {tx};")
        else:
            self(f"mbarrier.{op}.shared::cta.b64 {s}, [{b}], {count};")
        if slot >= 0:
            r = self.reg("r")
            self(f"mbarrier.pending_count.b64 {r}, {s};")
            self.out(slot, r)
        return s

    def wait(self, b: str, parity: int, slot: int) -> None:
        """Bounded wait: out[slot] = 1 if it completed, out[slot+1] = spins."""
        t0, now, el = self.reg("rd"), self.reg("rd"), self.reg("rd")
        sp, p, q = self.reg("r"), self.reg("p"), self.reg("p")
        top, done, fail = f"$w{slot}", f"$wd{slot}", f"$wf{slot}"
        self(f"mov.u64 {t0}, %globaltimer;")
        self(f"mov.u32 {sp}, 0;")
        self.lines.append(f"{top}:")
        self(f"mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 {p}, [{b}], {parity};")
        self(f"@{p} bra {done};")
        self(f"add.u32 {sp}, {sp}, 1;")
        self(f"mov.u64 {now}, %globaltimer;")
        self(f"sub.u64 {el}, {now}, {t0};")
        self(f"setp.gt.u64 {q}, {el}, %timeout;")
        self(f"@{q} bra {fail};")
        self(f"bra {top};")
        self.lines.append(f"{done}:")
        self.out_imm(slot, 1)
        self.out(slot + 1, sp)
        self(f"bra {fail}_end;")
        self.lines.append(f"{fail}:")
        self.out_imm(slot, 0)
        self.out(slot + 1, sp)
        self.lines.append(f"{fail}_end:")

    def ptx(self, arch: str = "sm_90a", single: bool = True) -> str:
        regs = [f"\t.reg .b32 %r<{self.n['r'] + 1}>;", f"\t.reg .b64 %rd<{self.n['rd'] + 1}>;",
                f"\t.reg .pred %p<{self.n['p'] + 1}>;"]
        head = [f".version 8.7", f".target {arch}", ".address_size 64", "",
                ".shared .align 8 .b64 bars[8];", ".shared .align 128 .b8 lbuf[16384];", "",
                f".visible .entry {self.name}(.param .u64 p_out, .param .u32 p_rep, "
                ".param .u64 p_timeout)", "{"]
        pre = ["\t.reg .b64 %out;", "\t.reg .b64 %timeout;", "\t.reg .b32 %tx;",
               "\t.reg .b32 %rank;", "\t.reg .pred %notme;",
               "\tld.param.u64 %out, [p_out];", "\tld.param.u64 %timeout, [p_timeout];",
               "\tmov.u32 %tx, %tid.x;", "\tmov.u32 %rank, %cluster_ctarank;"]
        if single:
            pre += ["\tsetp.ne.u32 %notme, %tx, 0;", "\t@%notme bra $END;"]
        return "\n".join(head + regs + pre + self.lines + ["$END:", "\texit;", "}", ""])


@dataclass(frozen=True)
class Litmus:
    name: str
    question: str
    build: Callable[[], str]
    cluster: tuple[int, int, int] = (1, 1, 1)
    block: int = 32
    risky: bool = False          # may hang (run last, in its own process)
    clusters: int = 1            # clusters launched at once (results aggregated with atomics)


def t_over_arrival_single(init: int, count: int) -> Callable[[], str]:
    def build() -> str:
        b = _B(f"lit_over_arrival_{init}_{count}")
        b0 = b.bar(0)
        b.out_imm(0, 7)  # reached the arrive
        b(f"mbarrier.init.shared::cta.b64 [{b0}], {init};")
        b.arrive(b0, count, 1)
        b.test(2, b0, 0)
        b.test(3, b0, 1)
        b.out_imm(4, 9)  # survived it
        return b.ptx()
    return build


def _tma_exit(issuer_waits: bool, name: str) -> str:
    """Warp 1 arms a barrier and issues an 8 KB bulk copy; then it exits at once (or
    waits for the barrier first).  Warp 0 waits on the barrier and reads the data."""
    b = _B(name)
    b0 = b.bar(0)
    w, p, q = b.reg("r"), b.reg("p"), b.reg("p")
    b(f"shr.u32 {w}, %tx, 5;")
    d = b.reg("r")
    b(f"mov.u32 {d}, lbuf;")
    src = b.reg("rd")
    b(f"add.u64 {src}, %out, 8192;")
    b(f"setp.ne.u32 {p}, %tx, 0;")
    b(f"@{p} bra $I0;")
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 1;")
    pz = b.reg("r")
    b(f"mov.u32 {pz}, 0xDEADBEEF;")
    b(f"st.shared.v4.u32 [{d}], {{{pz}, {pz}, {pz}, {pz}}};")
    b(f"st.shared.u32 [{d}+8188], {pz};")
    b("fence.mbarrier_init.release.cluster;")
    b("fence.proxy.async.shared::cta;")
    b.lines.append("$I0:")
    b("bar.sync 0;")
    b(f"setp.ne.u32 {q}, %tx, 32;")
    b(f"@{q} bra $I1;")
    # issuer: lane 0 of warp 1 writes the source, then copies it
    v = b.reg("r")
    b(f"add.u32 {v}, %tx, 0x5A000000;")
    b(f"st.global.u32 [{src}], {v};")
    b(f"st.global.u32 [{src}+8188], {v};")
    b("fence.proxy.async.global;")
    b("membar.gl;")
    s0 = b.reg("rd")
    b(f"mbarrier.arrive.expect_tx.shared::cta.b64 {s0}, [{b0}], 8192;")
    b(f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{src}], "
      f"8192, [{b0}];")
    if issuer_waits:
        b.wait(b0, 0, 20)
    b("bra $END;")
    b.lines.append("$I1:")
    b(f"setp.ne.u32 {q}, %tx, 0;")
    b(f"@{q} bra $END;")
    b.wait(b0, 0, 0)
    r0, r1 = b.reg("r"), b.reg("r")
    b(f"ld.shared.u32 {r0}, [{d}];")
    b(f"ld.shared.u32 {r1}, [{d}+8188];")
    b.out(2, r0)
    b.out(3, r1)
    b("nanosleep.u32 50000;")
    b(f"ld.shared.u32 {r0}, [{d}];")
    b.out(4, r0)
    return b.ptx(single=False)


def t_split_stamp() -> str:
    """CTA 1 stores a word in its own shared memory, fences, then issues a bulk copy into
    CTA 0 completing tx on CTA 0's barrier; CTA 0 waits, then reads CTA 1's word."""
    b = _B("lit_split_stamp")
    b0 = b.bar(0)
    d = b.reg("r")
    b(f"mov.u32 {d}, lbuf;")
    p0, p1 = b.reg("p"), b.reg("p")
    b(f"setp.eq.u32 {p0}, %rank, 0;")
    lead = b.reg("p")
    b(f"setp.eq.u32 {lead}, %tx, 0;")
    pz = b.reg("r")
    b(f"mov.u32 {pz}, 0xDEADBEEF;")
    b(f"@{lead} st.shared.u32 [{d}+512], {pz};")
    b(f"@!{lead} bra $S1;")
    b(f"@!{p0} bra $S1;")
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 1;")
    b("fence.mbarrier_init.release.cluster;")
    s0 = b.reg("rd")
    b(f"mbarrier.arrive.expect_tx.shared::cta.b64 {s0}, [{b0}], 256;")
    b.lines.append("$S1:")
    b("barrier.cluster.arrive.aligned;")
    b("barrier.cluster.wait.aligned;")
    b(f"@!{lead} bra $SJ;")
    b(f"@{p0} bra $S0;")
    v = b.reg("r")
    b(f"mov.u32 {v}, 0x5A000001;")
    b(f"st.shared.u32 [{d}+512], {v};")
    b("fence.acq_rel.cluster;")
    rd, rb, src = b.reg("r"), b.reg("r"), b.reg("rd")
    b(f"mapa.shared::cluster.u32 {rd}, {d}, 0;")
    b(f"mapa.shared::cluster.u32 {rb}, {b0}, 0;")
    b(f"add.u64 {src}, %out, 8192;")
    b(f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{rd}], [{src}], "
      f"256, [{rb}];")
    b("bra $SJ;")
    b.lines.append("$S0:")
    b.wait(b0, 0, 0)
    r1, x = b.reg("r"), b.reg("r")
    b(f"mapa.shared::cluster.u32 {r1}, {d}, 1;")
    b(f"ld.shared::cluster.u32 {x}, [{r1}+512];")
    b.out(2, x)
    b("nanosleep.u32 20000;")
    b(f"ld.shared::cluster.u32 {x}, [{r1}+512];")
    b.out(3, x)
    b.lines.append("$SJ:")
    b("barrier.cluster.arrive.aligned;")
    b("barrier.cluster.wait.aligned;")
    return b.ptx(single=False)


def t_pending_count() -> str:
    b = _B("lit_pending_count")
    b0 = b.bar(0)
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 4;")
    s = b.arrive(b0, 1, 0)
    b.out64(2, s)
    b.raw(4, b0)
    b.arrive(b0, 2, 6)
    s3 = b.arrive(b0, 1, 7)
    b.out64(8, s3)
    b.raw(10, b0)
    b.test(12, b0, 0)
    b.test(13, b0, 1)
    return b.ptx()


def t_bare_expect_tx() -> str:
    b = _B("lit_bare_expect_tx")
    b0 = b.bar(0)
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 1;")
    b(f"mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [{b0}], 16;")
    b.raw(0, b0)
    b.arrive(b0, 1, 2)
    b.raw(4, b0)
    b.test(6, b0, 0)
    b(f"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{b0}], 16;")
    b.raw(8, b0)
    b.test(10, b0, 0)
    b("nanosleep.u32 2000;")
    b.test(11, b0, 0)
    b.raw(12, b0)
    b.arrive(b0, 1, 14)
    b.raw(16, b0)
    b.test(18, b0, 0)
    b.test(19, b0, 1)
    return b.ptx()


def t_over_arrival() -> str:
    b = _B("lit_over_arrival")
    b0, b1 = b.bar(0), b.bar(1)
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 1;")
    b.arrive(b0, 2, 0)
    b.raw(2, b0)
    b.test(4, b0, 0)
    b.test(5, b0, 1)
    b.arrive(b0, 1, 6)
    b.raw(8, b0)
    b.test(10, b0, 0)
    b.test(11, b0, 1)
    b(f"mbarrier.init.shared::cta.b64 [{b1}], 2;")
    b.arrive(b1, 3, 12)
    b.raw(14, b1)
    b.test(16, b1, 0)
    b.test(17, b1, 1)
    b.arrive(b1, 1, 18)
    b.raw(20, b1)
    b.test(22, b1, 0)
    b.test(23, b1, 1)
    return b.ptx()


def t_two_phases_behind() -> str:
    b = _B("lit_two_phases_behind")
    b0 = b.bar(0)
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 1;")
    s0 = b.arrive(b0, 1, 0)
    s1 = b.arrive(b0, 1, 1)
    b.test(2, b0, 0)
    b.test(3, b0, 1)
    for slot, s in ((4, s0), (5, s1)):
        p, r = b.reg("p"), b.reg("r")
        b(f"mbarrier.test_wait.shared::cta.b64 {p}, [{b0}], {s};")
        b(f"selp.u32 {r}, 1, 0, {p};")
        b.out(slot, r)
    b.arrive(b0, 1, 6)
    b.test(7, b0, 0)
    b.test(8, b0, 1)
    b.raw(10, b0)
    return b.ptx()


def t_negative_tx() -> str:
    b = _B("lit_negative_tx")
    b0, b1 = b.bar(0), b.bar(1)
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 1;")
    b(f"mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [{b0}], 64;")
    b.raw(0, b0)
    b.test(2, b0, 0)
    b.arrive(b0, 1, 3, tx=64)
    b.raw(4, b0)
    b.test(6, b0, 0)
    # a real TMA copy lands before the expect_tx
    b(f"mbarrier.init.shared::cta.b64 [{b1}], 1;")
    b("fence.mbarrier_init.release.cluster;")
    d, src = b.reg("r"), b.reg("rd")
    b(f"mov.u32 {d}, lbuf;")
    b(f"add.u64 {src}, %out, 2048;")
    b(f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{src}], 64, [{b1}];")
    for _ in range(8):
        b("nanosleep.u32 10000;")
    b.raw(8, b1)
    b.test(10, b1, 0)
    b.arrive(b1, 1, 11, tx=64)
    b.test(12, b1, 0)
    b.raw(14, b1)
    return b.ptx()


def t_fresh_parity() -> str:
    b = _B("lit_fresh_parity")
    b0 = b.bar(0)
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 1;")
    b.test(0, b0, 1)
    b.test(1, b0, 0)
    b.raw(2, b0)
    return b.ptx()


def t_arrive_drop() -> str:
    b = _B("lit_arrive_drop")
    b0 = b.bar(0)
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 2;")
    b.arrive(b0, 1, 0, drop=True)
    b.raw(2, b0)
    b.arrive(b0, 1, 4)
    b.raw(6, b0)
    b.test(8, b0, 0)
    b.arrive(b0, 1, 9)
    b.raw(10, b0)
    b.test(12, b0, 1)
    return b.ptx()


def t_try_wait_time() -> str:
    b = _B("lit_try_wait_time")
    b0 = b.bar(0)
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 1;")
    t0, t1, d, p = b.reg("rd"), b.reg("rd"), b.reg("rd"), b.reg("p")
    b(f"mov.u64 {t0}, %globaltimer;")
    b(f"mbarrier.try_wait.parity.shared::cta.b64 {p}, [{b0}], 0;")
    b(f"mov.u64 {t1}, %globaltimer;")
    b(f"sub.u64 {d}, {t1}, {t0};")
    b.out64(0, d)
    b(f"mov.u64 {t0}, %globaltimer;")
    b(f"mbarrier.try_wait.parity.shared::cta.b64 {p}, [{b0}], 0, 200000;")
    b(f"mov.u64 {t1}, %globaltimer;")
    b(f"sub.u64 {d}, {t1}, {t0};")
    b.out64(2, d)
    return b.ptx()


def t_raw_layout() -> str:
    b = _B("lit_raw_layout")
    b0 = b.bar(0)
    slot = 0
    for n in (1, 2, 3, 1000, 0xFFFFF):
        b(f"mbarrier.init.shared::cta.b64 [{b0}], {n};")
        b.raw(slot, b0)
        b(f"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{b0}], 100;")
        b.raw(slot + 2, b0)
        b.arrive(b0, 1)
        b.raw(slot + 4, b0)
        slot += 6
    return b.ptx()


def t_remote_arrive() -> str:
    b = _B("lit_remote_arrive")
    b0, b1 = b.bar(0), b.bar(1)
    p0, p1 = b.reg("p"), b.reg("p")
    b(f"setp.eq.u32 {p0}, %rank, 0;")
    b(f"@!{p0} bra $R1;")
    b(f"mbarrier.init.shared::cta.b64 [{b0}], 1;")
    b(f"mbarrier.init.shared::cta.b64 [{b1}], 2;")
    b("fence.mbarrier_init.release.cluster;")
    b.lines.append("$R1:")
    b("barrier.cluster.arrive.aligned;")
    b("barrier.cluster.wait.aligned;")
    b(f"setp.eq.u32 {p1}, %rank, 1;")
    b(f"@!{p1} bra $R0;")
    r0, r1 = b.reg("r"), b.reg("r")
    b(f"mapa.shared::cluster.u32 {r0}, {b0}, 0;")
    b(f"mapa.shared::cluster.u32 {r1}, {b1}, 0;")
    b(f"mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{r0}], 1;")
    b(f"mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [{r1}], 32;")
    b(f"mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{r1}], 1;")
    b("nanosleep.u32 20000;")
    b(f"mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [{r1}], 32;")
    b("bra $RJ;")
    b.lines.append("$R0:")
    b.wait(b0, 0, 0)
    b.test(2, b1, 0)
    b.raw(4, b1)
    b.wait(b1, 0, 6)
    b.raw(8, b0)
    b.raw(10, b1)
    b.lines.append("$RJ:")
    b("barrier.cluster.arrive.aligned;")
    b("barrier.cluster.wait.aligned;")
    return b.ptx()


#: rounds and words per round of the scope hand-off litmus
SCOPE_ROUNDS, SCOPE_WORDS, SCOPE_CLUSTERS = 2000, 64, 64


def t_scope_handoff(rel: str, acq: str, wait: bool = True) -> Callable[[], str]:
    """Message passing across the CTAs of a pair, the lesson-8 pattern: CTA 1 writes
    ``SCOPE_WORDS`` words of its own shared memory with ordinary stores, then arrives on
    CTA 0's ``full`` barrier with ``mbarrier.arrive.release.<rel>.shared::cluster``; CTA 0
    waits with ``try_wait.parity.acquire.<acq>``, reads the words through
    ``ld.shared::cluster`` and counts those that are not this round's, then releases
    CTA 1's ``empty`` barrier (.release.cluster).  ``SCOPE_ROUNDS`` rounds per launch, many
    clusters at once.  Words (atomics, summed over clusters): 0 stale words read, 1 rounds
    completed by CTA 0, 2 waits that timed out.  ``wait=False`` (negative control): CTA 0
    does not wait on ``full`` -- stale words must show up, or the test could not see any."""
    def build() -> str:
        b = _B(f"lit_scope_{rel}_{acq}" + ("" if wait else "_nowait"))
        full, empty = b.bar(0), b.bar(1)
        p0 = b.reg("p")
        b(f"setp.eq.u32 {p0}, %rank, 0;")
        b(f"mbarrier.init.shared::cta.b64 [{full}], 1;")
        b(f"mbarrier.init.shared::cta.b64 [{empty}], 1;")
        b("fence.mbarrier_init.release.cluster;")
        b("barrier.cluster.arrive.aligned;")
        b("barrier.cluster.wait.aligned;")
        i, par, val, j, addr, v, bad, t = (b.reg("r") for _ in range(8))
        lb, rb, rfull, rempty = b.reg("r"), b.reg("r"), b.reg("r"), b.reg("r")
        q, tp = b.reg("p"), b.reg("p")
        t0, now, el = b.reg("rd"), b.reg("rd"), b.reg("rd")
        b(f"mov.u32 {lb}, lbuf;")
        b(f"mapa.shared::cluster.u32 {rb}, {lb}, 1;")
        b(f"mapa.shared::cluster.u32 {rfull}, {full}, 0;")
        b(f"mapa.shared::cluster.u32 {rempty}, {empty}, 1;")
        b(f"mov.u32 {bad}, 0;")
        b(f"mov.u32 {t}, 0;")
        b(f"mov.u32 {i}, 0;")
        b(f"@{p0} bra $C;")
        # ---- CTA 1: producer
        b.lines.append("$P:")
        b(f"add.u32 {par}, {i}, 1;")
        b(f"and.b32 {par}, {par}, 1;")
        b(f"mov.u64 {t0}, %globaltimer;")
        b.lines.append("$Pw:")
        b(f"mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 {q}, [{empty}], {par};")
        b(f"@{q} bra $Pgo;")
        b(f"mov.u64 {now}, %globaltimer;")
        b(f"sub.u64 {el}, {now}, {t0};")
        b(f"setp.gt.u64 {tp}, {el}, %timeout;")
        b(f"@!{tp} bra $Pw;")
        b(f"add.u32 {t}, {t}, 1;")
        b.lines.append("$Pgo:")
        # the consumer is already waiting (or, without its wait, reading) when the stores
        # start: without this delay the producer wins every race and no control could fail
        b("nanosleep.u32 500;")
        b(f"mul.lo.u32 {val}, {i}, {SCOPE_WORDS};")
        b(f"mov.u32 {j}, 0;")
        b.lines.append("$Ps:")
        b(f"shl.b32 {addr}, {j}, 2;")
        b(f"add.u32 {addr}, {addr}, {lb};")
        b(f"add.u32 {v}, {val}, {j};")
        b(f"add.u32 {v}, {v}, 1;")
        b(f"st.shared.u32 [{addr}], {v};")
        b(f"add.u32 {j}, {j}, 1;")
        b(f"setp.lt.u32 {q}, {j}, {SCOPE_WORDS};")
        b(f"@{q} bra $Ps;")
        b(f"mbarrier.arrive.release.{rel}.shared::cluster.b64 _, [{rfull}], 1;")
        b(f"add.u32 {i}, {i}, 1;")
        b(f"setp.lt.u32 {q}, {i}, {SCOPE_ROUNDS};")
        b(f"@{q} bra $P;")
        b("bra $J;")
        # ---- CTA 0: consumer
        b.lines.append("$C:")
        if not wait:
            b("bra $Cgo;")
        b(f"and.b32 {par}, {i}, 1;")
        b(f"mov.u64 {t0}, %globaltimer;")
        b.lines.append("$Cw:")
        b(f"mbarrier.try_wait.parity.acquire.{acq}.shared::cta.b64 {q}, [{full}], {par};")
        b(f"@{q} bra $Cgo;")
        b(f"mov.u64 {now}, %globaltimer;")
        b(f"sub.u64 {el}, {now}, {t0};")
        b(f"setp.gt.u64 {tp}, {el}, %timeout;")
        b(f"@!{tp} bra $Cw;")
        b(f"add.u32 {t}, {t}, 1;")
        b.lines.append("$Cgo:")
        b(f"mul.lo.u32 {val}, {i}, {SCOPE_WORDS};")
        b(f"mov.u32 {j}, 0;")
        b.lines.append("$Cr:")
        b(f"shl.b32 {addr}, {j}, 2;")
        b(f"add.u32 {addr}, {addr}, {rb};")
        b(f"ld.shared::cluster.u32 {v}, [{addr}];")
        b(f"sub.u32 {v}, {v}, {val};")
        b(f"sub.u32 {v}, {v}, {j};")
        b(f"setp.ne.u32 {q}, {v}, 1;")
        b(f"selp.u32 {v}, 1, 0, {q};")
        b(f"add.u32 {bad}, {bad}, {v};")
        b(f"add.u32 {j}, {j}, 1;")
        b(f"setp.lt.u32 {q}, {j}, {SCOPE_WORDS};")
        b(f"@{q} bra $Cr;")
        b(f"mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{rempty}], 1;")
        b(f"add.u32 {i}, {i}, 1;")
        b(f"setp.lt.u32 {q}, {i}, {SCOPE_ROUNDS};")
        b(f"@{q} bra $C;")
        b(f"atom.global.add.u32 {v}, [%out], {bad};")
        b(f"atom.global.add.u32 {v}, [%out+4], {i};")
        b.lines.append("$J:")
        b(f"atom.global.add.u32 {v}, [%out+8], {t};")
        b("barrier.cluster.arrive.aligned;")
        b("barrier.cluster.wait.aligned;")
        return b.ptx()
    return build


def t_exited_warp_syncthreads() -> str:
    """Does ``bar.sync 0`` complete when another warp of the CTA has exited?"""
    b = _B("lit_exited_warp_syncthreads")
    w, p = b.reg("r"), b.reg("p")
    b(f"shr.u32 {w}, %tx, 5;")
    b(f"setp.ne.u32 {p}, {w}, 0;")
    b(f"@{p} bra $END;")
    for _ in range(10):
        b("nanosleep.u32 10000;")
    b("bar.sync 0;")
    q = b.reg("p")
    b(f"setp.ne.u32 {q}, %tx, 0;")
    b(f"@{q} bra $END;")
    b.out_imm(0, 1)
    return b.ptx(single=False)


def t_exited_cta_cluster_barrier() -> str:
    """Does ``barrier.cluster`` complete when a whole CTA of the cluster has exited?"""
    b = _B("lit_exited_cta_cluster_barrier")
    p = b.reg("p")
    b(f"setp.ne.u32 {p}, %rank, 0;")
    b(f"@{p} bra $END;")
    for _ in range(10):
        b("nanosleep.u32 10000;")
    b("barrier.cluster.arrive.aligned;")
    b("barrier.cluster.wait.aligned;")
    q = b.reg("p")
    b(f"setp.ne.u32 {q}, %tx, 0;")
    b(f"@{q} bra $END;")
    b.out_imm(0, 1)
    return b.ptx(single=False)


LITMUS: tuple[Litmus, ...] = (
    Litmus("pending_count", "what mbarrier.pending_count returns for the state of an arrive",
           t_pending_count),
    Litmus("bare_expect_tx", "does a bare expect_tx that brings tx to 0 with no pending "
           "arrivals complete the phase?", t_bare_expect_tx),
    Litmus("over_arrival_1_2", "init(1), then one arrive with count 2",
           t_over_arrival_single(1, 2), risky=True),
    Litmus("over_arrival_2_3", "init(2), then one arrive with count 3",
           t_over_arrival_single(2, 3), risky=True),
    Litmus("tma_issuer_exits", "does a bulk copy's data land when its issuing thread exits "
           "before it completes?", lambda: _tma_exit(False, "lit_tma_issuer_exits"), block=64),
    Litmus("tma_issuer_waits", "control: the issuing thread waits for the copy",
           lambda: _tma_exit(True, "lit_tma_issuer_waits"), block=64),
    Litmus("split_stamp", "is a generic store before a bulk copy into another CTA visible "
           "once that CTA's barrier completes?", t_split_stamp, cluster=(2, 1, 1)),
    Litmus("two_phases_behind", "what try_wait/test_wait.parity returns two phases behind",
           t_two_phases_behind),
    Litmus("negative_tx", "complete_tx (or a TMA landing) before the expect_tx",
           t_negative_tx),
    Litmus("fresh_parity", "test_wait.parity on a fresh barrier", t_fresh_parity),
    Litmus("arrive_drop", "arrive_drop lowers the expected count of later phases",
           t_arrive_drop),
    Litmus("try_wait_time", "how long one try_wait suspends (default, and with a hint)",
           t_try_wait_time),
    Litmus("raw_layout", "the raw 64-bit barrier word after init / expect_tx / arrive",
           t_raw_layout),
    Litmus("remote_arrive", "remote arrive, arrive.expect_tx and complete_tx through mapa",
           t_remote_arrive, cluster=(2, 1, 1)),
    Litmus("scope_cta_cta", "lesson 8: are ordinary stores released by a remote "
           "mbarrier.arrive.release.cta and acquired by try_wait.acquire.cta (CUTLASS's "
           "defaults) ever read stale by the other CTA?", t_scope_handoff("cta", "cta"),
           cluster=(2, 1, 1), clusters=SCOPE_CLUSTERS),
    Litmus("scope_cluster_cluster", "control: the same hand-off with .release.cluster / "
           ".acquire.cluster", t_scope_handoff("cluster", "cluster"), cluster=(2, 1, 1),
           clusters=SCOPE_CLUSTERS),
    Litmus("scope_cta_cta_nowait", "negative control of scope_cta_cta: CTA 0 skips its "
           "wait, so stale words must be seen", t_scope_handoff("cta", "cta", wait=False),
           cluster=(2, 1, 1), clusters=SCOPE_CLUSTERS),
    Litmus("exited_warp_syncthreads", "bar.sync 0 after another warp exited",
           t_exited_warp_syncthreads, block=64, risky=True),
    Litmus("exited_cta_cluster_barrier", "barrier.cluster after another CTA exited",
           t_exited_cta_cluster_barrier, cluster=(2, 1, 1), block=32, risky=True),
)


#: What the H100 (driver 580, sm_90a) answered, 20 launches each, all identical unless
#: said otherwise (spec/hardware.md).  ``None``: the launch must fail (a trap).
EXPECTED: dict[str, Optional[dict[int, int]]] = {
    # pending_count returns the pending count *before* the arrive
    "pending_count": {0: 4, 6: 3, 7: 1, 12: 1, 13: 0},
    # a bare expect_tx bringing tx to 0 with no pending arrivals completes the phase
    "bare_expect_tx": {2: 1, 6: 0, 10: 1, 11: 1, 14: 1, 18: 0, 19: 1},
    # parity aliasing: a waiter two phases behind waits for the current phase
    "two_phases_behind": {0: 1, 1: 1, 2: 0, 3: 1, 4: 0, 5: 1, 6: 1, 7: 1, 8: 0},
    # tx may go negative inside a phase (complete_tx / a TMA landing before expect_tx)
    "negative_tx": {2: 0, 3: 1, 6: 1, 10: 0, 11: 1, 12: 1},
    "fresh_parity": {0: 1, 1: 0},
    # arrive_drop lowers the expected count of this and later phases
    "arrive_drop": {0: 2, 4: 1, 8: 1, 9: 1, 12: 1},
    "remote_arrive": {0: 1, 6: 1},
    # lesson 8: no stale word in a .cta-scoped cross-CTA hand-off (nor a .cluster one);
    # 64 clusters x 2,000 rounds per launch, no timed-out wait
    "scope_cta_cta": {0: 0, 1: SCOPE_ROUNDS * SCOPE_CLUSTERS, 2: 0},
    "scope_cluster_cluster": {0: 0, 1: SCOPE_ROUNDS * SCOPE_CLUSTERS, 2: 0},
    # exited threads count as arrived for bar.sync 0 and barrier.cluster
    "exited_warp_syncthreads": {0: 1},
    "exited_cta_cluster_barrier": {0: 1},
    # an arrive with more arrivals than pending traps (the launch fails)
    "over_arrival_1_2": None,
    "over_arrival_2_3": None,
}


def check(name: str, status: str, results: list) -> str:
    """'' if a litmus run matches ``EXPECTED`` (names without an entry always pass)."""
    if name not in EXPECTED:
        return ""
    exp = EXPECTED[name]
    if exp is None:
        return "" if status != "ok" else "expected the launch to fail (trap), it succeeded"
    if status != "ok" or not results:
        return f"launch failed: {status}"
    for rep, words in enumerate(results):
        for i, v in exp.items():
            if words[i] != v:
                return f"rep {rep}: word {i} = {words[i]}, expected {v}"
    return ""
