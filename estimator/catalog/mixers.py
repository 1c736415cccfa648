"""Recurrent mixers: the layers that keep a fixed state per sequence instead of a KV cache (Mamba-2, gated
DeltaNet, Mamba-1, LFM2's short convolution, Kimi Delta Attention), as `Architecture` holds them."""

from __future__ import annotations

from pydantic import Field

from estimator.catalog.arch_base import ArchPart as _Arch
from estimator.catalog.arch_base import Width

__all__ = ["GatedDeltaNet", "KimiDeltaAttention", "Mamba1", "Mamba2", "ShortConv"]


class Mamba2(_Arch):
    """A Mamba-2 mixer (transformers Mamba2Mixer / NemotronHMamba2Mixer): per-sequence conv and SSM state."""

    num_heads: Width
    head_dim: Width
    state_size: Width
    n_groups: Width
    conv_kernel: Width
    proj_bias: bool = False
    out_bias: bool | None = None  # out_proj's bias when the config sets it apart from in_proj's (Falcon-H1)
    conv_bias: bool = True
    gated_norm: bool = True
    # the config's mamba_ssm_cache_dtype, when it says (at most 8 bytes: fp64)
    state_dtype_bytes: int | None = Field(default=None, gt=0, le=8)

    @property
    def inner(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels the causal conv runs over: x, B and C (intermediate + 2 × groups × state)."""
        return self.inner + 2 * self.n_groups * self.state_size


class GatedDeltaNet(_Arch):
    """A gated DeltaNet linear-attention mixer (Qwen3-Next, Qwen3.5): per-sequence conv and delta-rule state."""

    num_k_heads: Width
    num_v_heads: Width
    head_k_dim: Width
    head_v_dim: Width
    conv_kernel: Width
    state_dtype_bytes: int | None = Field(default=None, gt=0, le=8)  # the config's mamba_ssm_dtype, when it says

    @property
    def key_dim(self) -> int:
        return self.num_k_heads * self.head_k_dim

    @property
    def value_dim(self) -> int:
        return self.num_v_heads * self.head_v_dim

    @property
    def conv_dim(self) -> int:
        """Channels the causal conv runs over: q, k and v."""
        return 2 * self.key_dim + self.value_dim


class Mamba1(_Arch):
    """A Mamba-1 selective-scan mixer (transformers JambaMambaMixer): one SSM state of ``state_size`` per inner
    channel, a depthwise causal conv over the inner channels, and dt/B/C made input-dependent by ``x_proj``."""

    inner: Width  # mamba_expand × hidden
    state_size: Width
    dt_rank: Width
    conv_kernel: Width
    proj_bias: bool = False  # in_proj and out_proj
    conv_bias: bool = True
    dt_norms: bool = False  # Jamba: RMSNorms on dt (dt_rank wide), B and C (state_size wide)


class ShortConv(_Arch):
    """LFM2's gated short convolution (transformers Lfm2ShortConv): in_proj to B, C and x (3 × hidden), a depthwise
    causal conv of ``conv_kernel`` over hidden channels, out_proj back to hidden. Its state is the conv window alone."""

    conv_kernel: Width
    bias: bool = False  # in_proj, conv and out_proj (the config's conv_bias)


class KimiDeltaAttention(_Arch):
    """Kimi Delta Attention (transformers KimiLinearDeltaAttention): gated DeltaNet with a per-channel decay. q, k
    and v of num_heads × head_dim each pass a short depthwise conv; the state is one head_dim × head_dim matrix per
    head, kept in fp32 whatever the model's dtype (vLLM mamba_utils.py MambaStateDtypeCalculator.kda_state_dtype:
    the conv in the model dtype, the recurrent state torch.float32; transformers' torch path computes it in float32)."""

    num_heads: Width
    head_dim: Width
    conv_kernel: Width

    @property
    def qkv_dim(self) -> int:
        return self.num_heads * self.head_dim
