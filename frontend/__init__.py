"""Front ends other than ``.pipe``: they produce the same per-warp programs
(``model/program.py``) that ``model/compile.py`` produces from a ``.pipe`` skeleton, so
every engine, renderer and the GPU replay run on them unchanged (ARCHITECTURE.md)."""
