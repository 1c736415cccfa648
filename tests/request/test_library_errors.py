"""The layers below the request refuse a job in the library's terms: a `FieldInvalid` located at the request field,
its message naming fields by their names (``ep 3 does not divide ...``). The command line words the same error
with its flags, so what it prints is the line it printed when the library named flags itself."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from estimator import FieldInvalid, estimate_for, estimate_training
from estimator.catalog.registry import Catalog
from estimator.request.options import flag_of
from estimator.training.workload import TrainingWorkload
from tests.conftest import CliResult

TRAIN: dict[str, str | bool] = {"model": "llama-3.1-8b", "gpu": "h100", "mode": "train"}

# (options, field, the library's message, the line the command line prints: the line it printed before the
# library named fields)
CASES: list[tuple[dict[str, str | bool], str, str, str]] = [
    ({"model": "mixtral-8x7b", "gpu": "h100", "ep": "3"}, "ep",
     "ep 3 does not divide mixtral-8x7b's 8 routed experts; give one of 1, 2, 4, 8",
     "--ep 3 does not divide mixtral-8x7b's 8 routed experts; give one of 1, 2, 4, 8"),
    ({"model": "llama-3.1-8b", "gpu": "h100", "ep": "2"}, "ep",
     "ep 2: llama-3.1-8b is not a mixture-of-experts model (no experts to deal out)",
     "--ep 2: llama-3.1-8b is not a mixture-of-experts model (no experts to deal out)"),
    ({"model": "deepseek-v3", "system": "hgx-h100", "ep": "8", "batch": "4", "dtype": "fp8"}, "batch",
     "batch 4 does not split evenly over the 8 attention groups of ep 8 ÷ gpus 1",
     "--batch 4 does not split evenly over the 8 attention groups of --ep 8 ÷ --gpus 1"),
    ({**TRAIN, "tp": "3"}, "tp", "tensor parallel 3 does not divide 32 attention heads",
     "tensor parallel 3 does not divide 32 attention heads"),
    ({**TRAIN, "qlora": True}, "qlora", "qlora trains LoRA adapters on a 4-bit base; give lora_rank",
     "--qlora trains LoRA adapters on a 4-bit base; give --lora-rank"),
    ({**TRAIN, "zero": "1", "fsdp": "full"}, "fsdp", "fsdp full and zero 1 are two ways to shard; pick one",
     "--fsdp full and --zero 1 are two ways to shard; pick one"),
    ({**TRAIN, "gpu": "a100", "precision": "fp8"}, "precision",
     "precision fp8 runs its GEMMs on FP8 tensor cores, which NVIDIA A100 SXM4 80GB lacks (its spec lists no fp8 "
     "FLOP/s): use precision bf16 or amp-bf16",
     "--precision fp8 runs its GEMMs on FP8 tensor cores, which NVIDIA A100 SXM4 80GB lacks (its spec lists no fp8 "
     "FLOP/s): use --precision bf16 or amp-bf16"),
    ({"model": "llama-3.1-8b", "system": "hgx-h100", "mode": "train", "dp": "16"}, "nodes",
     "tp 1 × pp 1 × dp 16 = 16 GPUs do not fit on 1 × hgx-h100 (8 GPUs): give nodes 2 or a smaller layout",
     "tp 1 × pp 1 × dp 16 = 16 GPUs do not fit on 1 × hgx-h100 (8 GPUs): give --nodes 2 or a smaller layout"),
    # a value past the workload's bound: at the field it came in (the tensor-parallel degree is gpus)
    ({"model": "llama-3.1-8b", "gpu": "h100", "batch": "1e17"}, "batch",
     "batch must be at most 1,000,000, got 100,000,000,000,000,000",
     "--batch must be at most 1,000,000, got 100,000,000,000,000,000"),
    ({"model": "llama-3.1-8b", "gpu": "h100", "gpus": "8k"}, "gpus", "gpus must be at most 4,096, got 8,000",
     "--gpus must be at most 4,096, got 8,000"),
    ({**TRAIN, "grad_accum": "2m"}, "grad_accum", "grad_accum must be at most 1,000,000, got 2,000,000",
     "--grad-accum must be at most 1,000,000, got 2,000,000"),
]


def _flags(values: dict[str, str | bool]) -> list[str]:
    """The command line of ``values``: each field by its flag (a flag alone for True)."""
    args: list[str] = []
    for field, value in values.items():
        args += [flag_of(field)] if value is True else [flag_of(field), str(value)]
    return args


@pytest.mark.parametrize(("values", "field", "message", "line"), CASES)
def test_the_library_names_the_field(values: dict[str, str | bool], field: str, message: str, line: str) -> None:
    with pytest.raises(FieldInvalid) as caught:
        estimate_for(None, **values)
    assert (caught.value.field, str(caught.value), caught.value.worded(flag_of)) == (field, message, line)


@pytest.mark.parametrize(("values", "field", "message", "line"), CASES)
def test_the_cli_words_it_with_flags(cli: Callable[..., CliResult], values: dict[str, str | bool], field: str,
                                     message: str, line: str) -> None:
    printed = cli("estimate", *_flags(values))
    assert (printed.exit_code, printed.stderr) == (2, f"error: {line}\n")


def test_estimate_training_refuses_a_layout_at_its_field(shipped_catalog: Catalog) -> None:
    """The Python API below the request: `estimate_training` with a workload whose TP does not split the heads."""
    workload = TrainingWorkload(batch=1, seq_len=2048, tp=3, profile=shipped_catalog.profiles.get("optimized"))
    with pytest.raises(FieldInvalid) as caught:
        estimate_training(shipped_catalog.model("llama-3.1-8b"), shipped_catalog.gpus.get("h100"), workload)
    assert (caught.value.field, str(caught.value)) == ("tp", "tensor parallel 3 does not divide 32 attention heads")


def test_several_refusals_keep_their_values_apart() -> None:
    """Joined refusals are located at the first one's field; two that fill the same brace keep their own value."""
    joined = FieldInvalid.joined([FieldInvalid("ep", "{ep} {count} must divide {dp} {dp_count}", count=8, dp_count=12),
                                  FieldInvalid("cp", "{cp} {count} is odd", count=3)])
    assert joined.field == "ep"
    assert str(joined) == "ep 8 must divide dp 12; cp 3 is odd"
    assert joined.worded(flag_of) == "--ep 8 must divide --dp 12; --cp 3 is odd"


def test_a_value_is_never_read_as_a_field() -> None:
    """A user's text that looks like a brace is shown as given, not replaced by a flag."""
    error = FieldInvalid("network", "{network} {text}: not a network", text="'{gpus}'")
    assert error.worded(flag_of) == "--network '{gpus}': not a network"
