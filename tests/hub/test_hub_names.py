"""Which names are Hub ids: told apart from paths, catalog names and sizes by their form alone."""

from __future__ import annotations

import pytest

from estimator.catalog.hub_names import HubRef, hub_reference


@pytest.mark.parametrize(("text", "ref"), [
    ("openai/gpt-oss-120b", HubRef("openai/gpt-oss-120b")),
    ("Qwen/Qwen3-8B@v1.0", HubRef("Qwen/Qwen3-8B", "v1.0", pinned=True)),
    ("Qwen/Qwen3-8B@refs/pr/12", HubRef("Qwen/Qwen3-8B", "refs/pr/12", pinned=True)),
    ("hf:openai/gpt-oss-120b", HubRef("openai/gpt-oss-120b", pinned=True)),
    ("https://huggingface.co/Qwen/Qwen3-8B", HubRef("Qwen/Qwen3-8B")),
    ("https://huggingface.co/Qwen/Qwen3-8B/tree/v2", HubRef("Qwen/Qwen3-8B", "v2", pinned=True)),
    ("hf.co/Qwen/Qwen3-8B/blob/main/config.json", HubRef("Qwen/Qwen3-8B", "main", pinned=True)),
])
def test_hub_ids(text: str, ref: HubRef) -> None:
    assert hub_reference(text) == ref


@pytest.mark.parametrize("text", [
    "gpt-oss-120b", "70b", "./Qwen/Qwen3-8B", "/models/Qwen3-8B", "~user/model", "../a/b", "a/b/c", "org--x/name",
    "org/na..me", "-org/name", "org/name-", "gpt-oss:120b", "org/name@", "org/name@../x", "a b/c", "",
])
def test_not_hub_ids(text: str) -> None:
    assert hub_reference(text) is None


def test_a_catalog_name_imports_nothing_of_the_hub() -> None:
    """huggingface_hub (0.44 s to import its hf_api here, `python -X importtime`) and the Hub modules load only for a
    Hub id: `estimate`'s cold start by catalog name stays as it was."""
    import subprocess
    import sys

    code = ("import sys; from estimator.cli.estimate import estimate_main; sys.argv = ['estimate', '--model', "
            "'llama-3.2-1b', '--gpu', 'h100', '--format', 'json']; estimate_main(); "
            "hub = ('huggingface_hub', 'estimator.catalog.hub'); "
            "sys.stderr.write(' '.join(m for m in sys.modules if m.startswith(hub)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("{") and done.stderr == ""
