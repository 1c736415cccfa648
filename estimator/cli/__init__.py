"""Command line: one module per command group; parse, build a workload, call the library, render."""
