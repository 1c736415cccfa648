"""The phases of a steady-state training step on one GPU, term by term: what each holds at its largest moment.

  forward-backward  resident states + autocast copies + saved activations + the loss gradients at backward start
  recompute         (full recomputation) resident + layer checkpoints + one layer's activations rebuilt
  optimizer-step    weights + gradients + master + optimizer states + the step's temporaries

Under autocast with full recomputation nothing saves the decoder layers' 16-bit weight copies for backward: autocast's
cache holds them through the forward and drops them when the forward leaves its autocast region, and each layer's
recompute casts its own again (PyTorch's autocast cache; non-reentrant checkpointing). Backward then starts without
them, and the forward's end — every layer's copy, the checkpoints and the logits at the loss — is the other candidate
for the first phase (docs/accuracy.md, "Training steps": the measured steps matched the copies' absence to the
megabyte).
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.training.report import PeakPhase

Term = tuple[str, int]  # a TrainingMemoryReport field held in a phase and its bytes in that phase


@dataclass(frozen=True)
class Phases:
    forward_backward: tuple[Term, ...]
    recompute: tuple[Term, ...]  # empty without full recomputation
    optimizer_step: tuple[Term, ...]

    def all(self) -> list[tuple[PeakPhase, tuple[Term, ...]]]:
        phases: list[tuple[PeakPhase, tuple[Term, ...]]] = [
            ("forward-backward", self.forward_backward), ("recompute", self.recompute),
            ("optimizer-step", self.optimizer_step)]
        return [(name, terms) for name, terms in phases if terms]

    def peak(self) -> tuple[PeakPhase, int]:
        return max(((name, sum(b for _, b in terms)) for name, terms in self.all()), key=lambda p: p[1])


@dataclass(frozen=True)
class Held:
    """What one GPU holds in a step, in bytes: the long-lived states and buffers, and the step's own tensors (the
    output layer's and the loss's only on the stage that holds them)."""

    weights: int
    gradients: int
    master: int
    optimizer: int
    ddp_buckets: int
    autocast: int  # autocast's 16-bit weight copies
    autocast_layers: int  # of those, the recomputed layers' (not saved for backward): 0 without full recompute
    gathered: int
    fp8_weights: int
    step_transient: int
    gradients_persist: bool  # gradient accumulation: gradients live between micro-batches
    activation: int
    output: int  # of the activation, the output layer's saved tensors
    loss_backward: int
    loss_forward: int  # the logits at the loss in the forward, beside its saved log-softmax
    recompute: int  # one layer's activations rebuilt (0 without full recompute)
    recompute_layers: int  # layers on the stage, each recomputed in turn


def _with(terms: list[Term], name: str, value: int) -> list[Term]:
    return [(k, value if k == name else v) for k, v in terms]


def _total(terms: list[Term]) -> int:
    return sum(b for _, b in terms)


def step_phases(h: Held) -> Phases:
    """Each phase's tensors, term by term (the module docstring's sums); zero terms left out."""
    base: list[Term] = [("weights_bytes", h.weights), ("master_weights_bytes", h.master),
                        ("optimizer_bytes", h.optimizer), ("ddp_bucket_bytes", h.ddp_buckets)]
    if h.gradients_persist:
        base.insert(1, ("gradient_bytes", h.gradients))
    base += [("autocast_copy_bytes", h.autocast), ("gathered_params_bytes", h.gathered),
             ("fp8_weight_bytes", h.fp8_weights)]
    forward = [*base, ("activation_bytes", h.activation), ("loss_backward_bytes", h.loss_backward)]
    recompute = [*base, ("activation_bytes", h.activation - h.output),
                 ("recompute_bytes", h.recompute)] if h.recompute else []
    if h.autocast_layers:  # the layers' copies die at the forward's end; each recompute casts its layer's again
        rest = h.autocast - h.autocast_layers
        ends = (_with(forward, "autocast_copy_bytes", rest),
                [*base, ("activation_bytes", h.activation), ("loss_forward_bytes", h.loss_forward)])
        forward = max(ends, key=_total)
        recompute = _with(recompute, "autocast_copy_bytes", rest + h.autocast_layers // max(h.recompute_layers, 1))
    step = [("weights_bytes", h.weights), ("gradient_bytes", h.gradients), ("master_weights_bytes", h.master),
            ("optimizer_bytes", h.optimizer), ("ddp_bucket_bytes", h.ddp_buckets),
            ("optimizer_step_bytes", h.step_transient)]
    return Phases(*(tuple((k, v) for k, v in terms if v) for terms in (forward, recompute, step)))
