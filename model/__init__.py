"""The one executable semantics of the CUTLASS pipelines (ARCHITECTURE.md).

Nothing here imports any other part of pipeproof; engines, the PTX emitter and the GPU
conformance runner interpret what is defined here.
"""
