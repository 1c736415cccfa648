"""What every part of a model architecture shares: the ceilings on what a config may say, and the frozen, strict
pydantic base of each part (`estimator.catalog.architecture`, `estimator.catalog.mixers`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MAX_LAYERS", "MAX_PARAMS", "MAX_WIDTH", "ArchPart", "Count", "Width"]

# Ceilings on what a config may say, far beyond any published model so that only a typo or hostile input meets them,
# and low enough that the terms stay fast and exact (a 10,000,000-layer config took 22 s): the deepest published
# decoders have ~130 layers (Llama 3.1 405B: 126), the widest dimensions are vocabularies of ~260k and contexts of
# ~10M tokens (Llama 4 Scout: 10,485,760).
MAX_LAYERS = 4096
MAX_WIDTH = 2**24  # 16,777,216: any width, head count, vocabulary, expert count or context length
MAX_PARAMS = 10**15
Count = Annotated[int, Field(ge=0, le=MAX_PARAMS)]  # a tower's parameters, or how many of it
Width = Annotated[int, Field(gt=0, le=MAX_WIDTH)]  # a width, head count or other size that cannot be zero


class ArchPart(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, allow_inf_nan=False)
