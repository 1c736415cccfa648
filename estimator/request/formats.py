"""Number formats a request names: the weights' (``dtype``, else the checkpoint's own), the KV cache's, with
``group_size`` applied; and the inference workload that plan's and sweep's points share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from estimator.errors import SpecNotFound
from estimator.request.errors import FieldInvalid

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.catalog.specs import NumberFormat
    from estimator.inference.workload import InferenceWorkload

KV_FORMATS_HINT = "use fp32, fp16, bf16, fp8 or int8"
# The inference workload's fields that a request's fields give (workload name → request field), where a refusal
# of one is located (`estimator.request.errors.located`): the tensor-parallel degree is the --gpus option.
WORKLOAD_FIELDS = {"batch": "batch", "prompt_tokens": "prompt_tokens", "output_tokens": "output_tokens",
                   "tensor_parallel": "gpus"}


def number_format(catalog: Catalog, name: str, group_size: int | None) -> NumberFormat:
    """A weight format by name, with ``group_size`` applied where the format is grouped."""
    fmt = catalog.formats.get(name)
    if group_size is not None:
        _check_group_size(group_size)
        if fmt.group_size is None:
            raise FieldInvalid("group_size", "{group_size} applies to grouped formats (gptq-int4, awq-int4, nf4, "
                               "mxfp4, nvfp4), not {name}", name=fmt.name)
        fmt = fmt.with_group_size(group_size)
    return fmt


def weights_format(catalog: Catalog, model: ModelSpec, dtype: str | None, group_size: int | None) -> NumberFormat:
    """``dtype`` when given; else the checkpoint's own format: its file headers' bytes (a folder of safetensors,
    a .gguf file), else its quantization_config, else bf16."""
    if dtype is not None:
        return covering(number_format(catalog, dtype, group_size), model)
    if model.stored is not None and model.arch is not None:
        from estimator.model.memory import stored_format

        compute = (catalog.formats.get(model.checkpoint.base).compute_dtype if model.checkpoint is not None
                   else model.stored.compute_dtype)
        try:
            base = catalog.formats.get(compute)
        except SpecNotFound:  # fp4 (MXFP4, NVFP4) names no catalog format: the checkpoint's own format carries it
            assert model.checkpoint is not None
            base = catalog.formats.get(model.checkpoint.base)
        return stored_format(model.arch, model.stored, base)
    if model.checkpoint_error is not None:  # the config's own words (it says to give --dtype), located at dtype
        raise FieldInvalid("dtype", "{message}", message=model.checkpoint_error)
    if model.checkpoint is None:
        return number_format(catalog, "bf16", group_size)
    return _checkpoint_weights(catalog, model, group_size)


def covering(fmt: NumberFormat, model: ModelSpec | None) -> NumberFormat:
    """``fmt``, where it covers some of ``model``'s weights: a format of the routed experts alone (mxfp4, as vLLM
    quantizes it) on a model without them would leave every weight 16-bit under its name, so it is refused."""
    if model is not None and fmt.scope == "experts" and model.arch is not None and model.arch.moe is None:
        raise FieldInvalid("dtype", "{dtype} {name} quantizes routed experts only (as vLLM does: its other layers "
                           "stay 16-bit) and {model} has none; use nvfp4 for FP4 linear layers", name=fmt.name,
                           model=model.name)
    return fmt


def _checkpoint_weights(catalog: Catalog, model: ModelSpec, group_size: int | None) -> NumberFormat:
    """The checkpoint's quantization_config as a format (``group_size`` applied where it is grouped), covering the
    modules it quantizes (`estimator.model.modules`): its exclusions 16-bit, a mixed checkpoint's modules each in
    its own format."""
    from estimator.catalog.checkpoint_quant import checkpoint_format, module_formats

    quant = model.checkpoint
    assert quant is not None
    fmt = checkpoint_format(quant, catalog.formats.get(quant.base))
    if group_size is not None:
        _check_group_size(group_size)
        fmt = fmt.with_group_size(group_size) if fmt.group_size is not None else fmt
    if model.arch is None or not (quant.kept or quant.modules):
        return fmt
    from estimator.model.modules import module_format

    return module_format(model.arch, fmt, quant.kept, module_formats(quant, catalog.formats.get),
                         mixed=bool(quant.modules))


def _check_group_size(group_size: int) -> None:
    """A group holds at least one weight: a zero or negative size would divide the scale bits by nothing or make
    them negative (the fuzz campaign's `--group-size -1` gave negative weights that "fit")."""
    if group_size < 1:
        raise FieldInvalid("group_size", "{group_size} must be a positive number of weights per group, got {size}",
                           size=group_size)


def kv_format(catalog: Catalog, weights: NumberFormat, kv_dtype: str | None) -> NumberFormat:
    """The KV-cache format: as asked, else the compute precision (fp16 models cache fp16, quantized ones bf16)."""
    if kv_dtype is None:
        return catalog.formats.get(weights.compute_dtype if weights.compute_dtype in ("fp32", "fp16") else "bf16")
    fmt = catalog.formats.get(kv_dtype)
    if not fmt.kv_cache:
        raise FieldInvalid("kv_dtype", "{kv_dtype} {name} is not a KV-cache format; {hint}", name=kv_dtype,
                           hint=KV_FORMATS_HINT)
    return fmt


def inference_workload(catalog: Catalog, dtype: str | None, kv_dtype: str | None, profile: str, *,
                       group_size: int | None, logits: str, model: ModelSpec | None = None,
                       **fields: int) -> InferenceWorkload:
    """The validated workload of one of plan's or sweep's points (``fields``: its counts and degree) for
    ``model``: ``dtype``, else the model's checkpoint format, as estimate's (`weights_format`)."""
    weights = (weights_format(catalog, model, dtype, group_size) if model is not None
               else number_format(catalog, dtype or "bf16", group_size))
    return workload_of(weight_format=weights, kv_format=kv_format(catalog, weights, kv_dtype),
                       profile=catalog.profiles.get(profile), logits=logits, **fields)


def workload_of(**fields: Any) -> InferenceWorkload:
    """The InferenceWorkload of these fields, a refusal located at the request field it came from."""
    from pydantic import ValidationError

    from estimator.inference.workload import InferenceWorkload
    from estimator.request.errors import located

    try:
        return InferenceWorkload(**fields)
    except ValidationError as error:
        raise located(error, WORKLOAD_FIELDS) from None
