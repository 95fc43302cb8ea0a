"""``--param NAME=VALUE`` and ``NAME=LO..HI`` as the commands read them (``check``,
``conform``, ``emit``): a leaf module, so that ``impl/`` commands need not import the
main command line back."""

from __future__ import annotations

from typing import Any, Sequence

from .model.errors import ConfigError


def parse_params(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items:
        if "=" not in it:
            raise ConfigError(f"--param {it!r}: expected NAME=VALUE (e.g. --param k_tiles=8)")
        k, v = it.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise ConfigError(f"--param {it!r}: {k!r} is not a parameter name")
        if k in out:
            raise ConfigError(f"--param {k} is given twice; give each parameter once "
                              f"(a range: --param {k}=LO..HI)")
        v = v.strip()
        try:
            if ".." in v:
                lo, hi = v.split("..", 1)
                out[k] = range(int(lo, 0), int(hi, 0) + 1)
                if not out[k]:
                    raise ConfigError(f"--param {it!r}: the range is empty (LO must not "
                                      f"exceed HI, e.g. {k}={hi.strip()}..{lo.strip()})")
            elif v in ("True", "False"):
                out[k] = v == "True"
            else:
                out[k] = int(v, 0)
            for x in ((out[k].start, out[k].stop - 1) if isinstance(out[k], range)
                      else (out[k],)):
                if isinstance(x, int) and x.bit_length() > 64:
                    raise ConfigError(f"--param {k}: {v[:30]}... does not fit in 64 bits")
        except ValueError:
            raise ConfigError(f"--param {it!r}: {v!r} is not an integer (or LO..HI range)") \
                from None
    return out
