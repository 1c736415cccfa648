"""Names people paste: nvidia-smi's card names resolve; an unknown model gets suggestions of its family and size
first and the two ways to give a model the catalog lacks; an unknown GPU or system points at its listing."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from estimator.catalog.suggest import name_parts
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


@pytest.mark.parametrize(("pasted", "name"), [
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"),  # nvidia-smi --query-gpu=name on an H100 SXM
    ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090 24GB"),
    ("NVIDIA L4", "NVIDIA L4 24GB"),
])
def test_nvidia_smi_names_resolve(cli: Cli, pasted: str, name: str) -> None:
    result = cli("estimate", "--model", "8b", "--gpu", pasted, "--format", "json")
    assert result.exit_code == 0, result.stderr
    gpu = json.loads(result.stdout)["gpu"]
    assert (gpu["name"], gpu["requested_as"]) == (name, pasted)


def _suggested(stderr: str) -> list[str]:
    assert stderr.count("\n") == 1, stderr
    listed = stderr.split("did you mean ", 1)[1].split("?", 1)[0]
    return [s.strip(" '") for s in listed.split(",")]


@pytest.mark.parametrize(("wanted", "first", "size"), [
    ("qwen3-33b", "qwen3-32b", "33b"),  # the dense Qwen3 of that size before the 30B-A3B MoE
    ("qwen3-30b-a4b", "qwen3-30b-a3b", "30b"),  # an MoE name: the MoE of that size first
    ("gpt-oss-150b", "gpt-oss-120b", "150b"),
    ("llama-3.4-8b", "llama-3-8b", "8b"),  # a kin family (the same first word) of the same size
    ("deepseek-r1-distill-llama-13b", "deepseek-r1-distill-llama-8b", "13b"),  # the distill, not deepseek-r1
    ("Qwen/Qwen3-33B", "qwen3-32b", "33b"),  # a Hugging Face id: its repository name is read
])
def test_unknown_model_suggests_its_family_and_size(cli: Cli, wanted: str, first: str, size: str) -> None:
    result = cli("estimate", "--model", wanted, "--gpu", "h100")
    assert result.exit_code != 0 and result.stdout == ""
    suggested = _suggested(result.stderr)
    assert suggested[0] == first
    assert "gpt2" not in suggested
    if "/" in wanted:  # a Hub id is read from the Hub; the tests run offline, with nothing cached
        assert result.stderr.startswith(f"error: --model '{wanted}': HF_HUB_OFFLINE is set and {wanted} is not in "
                                        "the cache")
    else:
        assert "--model path/to/config.json" in result.stderr and f"--model {size}:" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_model_with_nothing_close_still_says_how_to_give_one(cli: Cli) -> None:
    result = cli("estimate", "--model", "nope", "--gpu", "h100")
    assert result.stderr == ("error: unknown model 'nope'; give its config.json (--model path/to/config.json) or its "
                             "parameter count alone (--model COUNT: a dense model of that many parameters)\n")


def test_unknown_family_gets_no_did_you_mean_and_other_families_are_labelled(cli: Cli) -> None:
    result = cli("estimate", "--model", "internlm2-20b", "--gpu", "h100")
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: unknown model 'internlm2-20b'; no internlm2 model is in the catalog (of "
                                    "other families, about 20B: ")
    assert "did you mean" not in result.stderr and "(--model 20b: a dense model" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (("--gpu", "nope"), "unknown GPU 'nope'; nothing in the catalog is spelled close to it; `estimator gpus`"),
    (("--system", "nope"), "unknown system 'nope'; nothing in the catalog is spelled close to it; "
                           "`estimator systems`"),
    (("--system", "hgx-h10"), "unknown system 'hgx-h10'; did you mean 'hgx-h100'"),
    (("--gpu", "h10"), "unknown GPU 'h10'; did you mean 'h100'"),
])
def test_unknown_gpu_or_system_is_one_helpful_line(cli: Cli, args: tuple[str, ...], message: str) -> None:
    result = cli("estimate", "--model", "8b", *args)
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: {message}"), result.stderr


@pytest.mark.parametrize(("name", "family", "billions", "moe"), [
    ("qwen3-30b-a3b", "qwen3", 30.0, True),
    ("mixtral-8x7b", "mixtral", 56.0, True),
    ("qwen3-0.6b", "qwen3", 0.6, False),
    ("mistral-7b-v0.1", "mistral", 7.0, False),
    ("gpt2", "gpt2", None, False),
    ("deepseek-v3", "deepseekv3", None, False),
])
def test_name_parts(name: str, family: str, billions: float | None, moe: bool) -> None:
    parts = name_parts(name)
    assert (parts.family, parts.billions, parts.moe) == (family, billions, moe)
