"""Option types of ``estimate --mode train``: kept apart from the training model so the CLI imports fast."""

from __future__ import annotations

from enum import Enum
from typing import Any

from estimator.errors import WorkloadInvalid


class Mode(str, Enum):
    infer = "infer"
    train = "train"


class Precision(str, Enum):
    fp32 = "fp32"
    amp_bf16 = "amp-bf16"
    amp_fp16 = "amp-fp16"
    bf16 = "bf16"
    fp8 = "fp8"


class Optimizer(str, Enum):
    adamw = "adamw"
    adamw_fused = "adamw-fused"
    adam_8bit = "adam-8bit"
    sgd = "sgd"
    sgd_momentum = "sgd-momentum"
    adafactor = "adafactor"
    lion = "lion"


class Recompute(str, Enum):
    none = "none"
    selective = "selective"
    full = "full"


class Attention(str, Enum):
    sdpa = "sdpa"
    flash = "flash"
    eager = "eager"


class Fsdp(str, Enum):
    full = "full"
    grad_op = "grad-op"


def reject_training_options(options: dict[str, Any]) -> None:
    """In inference mode, a training option given on the command line is a mistake: say so."""
    given = [name for name, value in options.items() if value not in (None, False)]
    if given:
        raise WorkloadInvalid(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to --mode train")
