"""The fixed choices of the options: each an Enum whose values are what a user types."""

from __future__ import annotations

from enum import Enum

from estimator.training.options import Attention, Fsdp, Mode, Optimizer, Precision, Recompute

__all__ = ["Attention", "Fsdp", "Logits", "MlaCache", "Mode", "Optimizer", "OutputFormat", "Precision", "Recompute",
           "SortBy", "Units"]


class OutputFormat(str, Enum):
    """The one --format choice; each command takes the subset it can write (`convert.check_format`)."""

    table = "table"
    json = "json"
    csv = "csv"
    xlsx = "xlsx"


class Units(str, Enum):
    gb = "gb"
    gib = "gib"


class Logits(str, Enum):
    last = "last"
    all = "all"


class MlaCache(str, Enum):
    """estimate --mla-cache."""

    latent = "latent"
    decompressed = "decompressed"


class SortBy(str, Enum):
    """plan --sort."""

    cost = "cost"
    owned = "owned"
    rented = "rented"
    cards = "cards"
    throughput = "throughput"
