"""The native explicit engine: the transition templates of ``checker/symbolic.py``
(``Encoding``) printed as C, compiled once per kernel, and searched breadth-first in
native code.  Nothing here restates a rule of the model: the C is a transcription of the
z3 terms that the model's own transition functions produce over the value interface.

``ccode`` prints the C, ``build`` compiles and loads it (cffi, the system C compiler),
``search`` runs it and turns its answers into the verdicts and traces the explicit engine
gives; ``por`` answers its stubborn-set callback with the explicit engine's reducer, whose
closure ``porwalk`` computes in C.
"""
