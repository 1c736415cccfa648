"""What the terms need to know about a job besides its size: formats, profile and the runtime's choices.

`estimator.inference.workload.InferenceWorkload` satisfies `Runtime`; the terms take the grid point (batch, prompt,
output) as separate arguments so that one function serves a single estimate and a whole sweep grid.
"""

from __future__ import annotations

from typing import Literal, Protocol

from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import NumberFormat


class Runtime(Protocol):
    """The fixed settings of an inference job (read-only)."""

    @property
    def weight_format(self) -> NumberFormat: ...

    @property
    def kv_format(self) -> NumberFormat: ...

    @property
    def profile(self) -> EfficiencyProfile: ...

    @property
    def logits(self) -> Literal["last", "all"]: ...

    @property
    def mla_layout(self) -> Literal["latent", "decompressed"]: ...

    @property
    def activation_bytes_per_element(self) -> int: ...
