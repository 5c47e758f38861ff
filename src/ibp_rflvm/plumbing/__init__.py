"""Plumbing that knows no model: input checks and sparse input, row blocks on threads, the
checkpoint file, tables on disk, processes for chains and a neighbour graph for scanpy.

Everything above imports from here and nothing here imports the model, so each module can be
read, tested and replaced without the sampler.
"""
