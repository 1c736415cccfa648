"""Inference: the workload, `estimate` and its Report."""
