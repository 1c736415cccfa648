"""What the user wants to run: validated inference workloads."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import NumberFormat
from estimator.report import MAX_BATCH, MAX_TOKENS

__all__ = ["MAX_BATCH", "MAX_TOKENS", "InferenceWorkload"]


class InferenceWorkload(BaseModel):
    """One inference job: ``batch`` sequences of ``prompt_tokens`` in, ``output_tokens`` generated each."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, allow_inf_nan=False)

    batch: int = Field(default=1, ge=1, le=MAX_BATCH)
    prompt_tokens: int = Field(default=2048, ge=1, le=MAX_TOKENS)
    output_tokens: int = Field(default=0, ge=0, le=MAX_TOKENS)
    weight_format: NumberFormat
    kv_format: NumberFormat
    tensor_parallel: int = Field(default=1, ge=1, le=4096)
    logits: Literal["last", "all"] = "last"
    mla_cache: Literal["latent", "decompressed"] | None = None  # None: the profile's runtime decides
    profile: EfficiencyProfile

    @property
    def mla_layout(self) -> Literal["latent", "decompressed"]:
        """The MLA cache layout: as asked, else what the profile's runtime caches (transformers: decompressed)."""
        if self.mla_cache is not None:
            return self.mla_cache
        return "decompressed" if self.profile.decompressed_mla_cache else "latent"

    @property
    def context_tokens(self) -> int:
        """Tokens each sequence holds in the KV cache at the end: prompt plus generated."""
        return self.prompt_tokens + self.output_tokens

    @property
    def activation_bytes_per_element(self) -> int:
        """Activations run in the compute precision: fp32 models in 4 bytes, everything else in 16 bit."""
        return 4 if self.weight_format.compute_dtype == "fp32" else 2
