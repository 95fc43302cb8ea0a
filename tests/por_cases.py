"""The kernels the native stubborn-set closure is compared on with the Python closure
(tests/test_por_walk.py, test_por_settle.py, test_por_closure.py,
test_por_native_search.py): each file bounds the searches with its own state counts."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: every bundled example, relative to examples/ (the ``-m slow`` sweeps)
ALL = sorted(str(p.relative_to(ROOT / "examples")) for p in (ROOT / "examples").rglob("*.pipe"))
MULTICAST_4 = ("textbook/pipeline_tma_async_multicast.pipe", {"stages": 4, "k_tiles": 8})


def cases(bounds: dict[str, int], multicast: tuple = MULTICAST_4) -> list[tuple]:
    """(example, params, state bound) for each example named in ``bounds``, in its order;
    the multicast example with ``multicast``'s parameters."""
    return [(name, dict(multicast[1]) if name == multicast[0] else {}, n)
            for name, n in bounds.items()]


def others(cases_: list[tuple]) -> list[str]:
    """The bundled examples not among ``cases_``."""
    names = {c[0] for c in cases_}
    return [n for n in ALL if n not in names]
