"""The `estimate` console script's own parser (`estimator.request.words.parse`) against the typer command it stands
for: both are built from the request layer's option definitions.

The definitions are rebuilt here from the typer command's parameters and compared; then many command lines
(hand-picked and random: valid and invalid values, both spellings of each option, ``--name=VALUE``, repeats, stray
words, ``--help``) are parsed both ways: wherever the fast parser takes a line, typer takes it too and gives the
same parameters, and end to end the script prints the same bytes on both streams and exits with the same status.
"""

from __future__ import annotations

import io
import random
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, get_args

import pytest
import typer

from estimator.cli import estimate
from estimator.errors import WorkloadInvalid
from estimator.request.options import Option, options_of
from estimator.request.words import parse as parse_words

OPTIONS = options_of("estimate")


def parse(args: list[str]) -> tuple[dict[str, Any], list[str]] | None:
    return parse_words("estimate", args)


MODEL = ("--model", "llama-3.2-1b")
VALUES: dict[str, list[str]] = {
    "text": ["8", "70b", "h100", "32Ki", "a b", "x=y", "ünï", "", "-1", "--gpu", "-"],
    "int": ["64", "007", "0", "1_000", " 5", "+3", "-1", "x", "9" * 30, ""],
    "path": ["out.json", "dir/out.csv", "exists.json", "", "-", "-x.json"],
}


def _typer_command() -> Any:
    app = typer.Typer(add_completion=False)
    app.command()(estimate.estimate_command_function())
    return typer.main.get_command(app)


def _kind(param: Any) -> str | type[Enum]:
    annotation = param.type_descriptor.annotation
    options = [a for a in get_args(annotation) if a is not type(None)] or [annotation]
    (leaf,) = options
    if leaf is bool:
        return "flag"
    if isinstance(leaf, type) and issubclass(leaf, Enum):
        return leaf
    return {str: "text", int: "int", Path: "path"}[leaf]


def test_the_definitions_are_the_typer_commands_options() -> None:
    rebuilt = []
    for param in _typer_command().params:
        assert not param.secondary_opts and not param.multiple and param.nargs == 1 and param.envvar is None
        assert param.expose_value and param.prompt is None
        rebuilt.append((param.name, tuple(param.opts), _kind(param), param.default, param.required, param.help,
                        param.callback is not None, param.is_eager))
    assert rebuilt == [(o.name, o.flags, o.takes, o.default, o.required, o.help, o.checked, o.eager) for o in OPTIONS]


def _typer_params(args: list[str]) -> dict[str, Any] | Exception:
    try:
        return estimate.estimate_params(args)
    except Exception as error:  # typer's usage errors, or a callback's WorkloadInvalid
        return error


def _fast_params(args: list[str]) -> dict[str, Any] | Exception | None:
    parsed = parse(args)
    if parsed is None:
        return None
    try:
        return estimate.checked(*parsed)
    except WorkloadInvalid as error:
        return error


def _word(opt: Option, rng: random.Random, folder: Path) -> list[str]:
    flag = rng.choice(opt.flags)
    if opt.takes == "flag":
        return [flag] if rng.random() < 0.9 else [f"{flag}=1"]
    if isinstance(opt.takes, type):
        values = [*(c.value for c in opt.takes), next(iter(opt.takes)).value.upper(), "bogus"]
    else:
        values = VALUES[str(opt.takes)]
    value = rng.choice(values)
    if opt.takes == "path" and value and not value.startswith("-"):
        value = str(folder / value) if rng.random() < 0.8 else str(folder / "missing" / value)
    if flag.startswith("--") and rng.random() < 0.3:
        return [f"{flag}={value}"]
    return [flag, value]


def _lines(folder: Path, count: int) -> list[list[str]]:
    (folder / "dir").mkdir(exist_ok=True)
    (folder / "exists.json").write_text("{}")
    rng = random.Random(10)
    fixed = [[*MODEL], ["-m", "8b", "-g", "h100", "--gpus", "2"], ["--model=8b", "--format=json"], [],
             ["--help"], [*MODEL, "--help"], [*MODEL, "--model", "8b"], [*MODEL, "stray"], [*MODEL, "--"],
             [*MODEL, "--gpu"], ["-m"], [*MODEL, "--explain", "--qlora", "--sequence-parallel"],
             [*MODEL, "-fjson"], [*MODEL, "--form", "json"], [*MODEL, "--mode", "train", "--zero", "3"],
             [*MODEL, "-o", str(folder), "--plot", str(folder / "missing" / "x.png")],
             [*MODEL, "--plot", str(folder / "missing" / "x.png"), "-o", str(folder)],
             [*MODEL, "-o", str(folder / "exists.json")], [*MODEL, "-o", str(folder / "exists.json"), "--force"],
             [*MODEL, "--force", "--plot", str(folder / "exists.json")]]
    lines = list(fixed)
    while len(lines) < count:
        chosen = rng.sample(OPTIONS, rng.randint(0, 8))
        words = [w for opt in chosen for w in _word(opt, rng, folder)]
        if rng.random() < 0.85:
            words = [*MODEL, *words] if rng.random() < 0.5 else [*words, *MODEL]
        if rng.random() < 0.05:
            words.insert(rng.randint(0, len(words)), rng.choice(["stray", "--bogus", "--help", "-g"]))
        lines.append(words)
    return lines


def test_the_fast_parser_takes_what_typer_takes_and_gives_the_same(tmp_path: Path) -> None:
    taken = 0
    for args in _lines(tmp_path, 800):
        fast = _fast_params(args)
        if fast is None:
            continue  # typer parses it: whatever it says is what the script says
        taken += 1
        slow = _typer_params(args)
        if isinstance(fast, Exception):
            assert isinstance(slow, WorkloadInvalid) and str(slow) == str(fast), args
        else:
            assert fast == slow, args
            assert isinstance(slow, dict)
            assert {k: type(v) for k, v in fast.items()} == {k: type(v) for k, v in slow.items()}, args
    assert taken > 150  # not vacuous: about a fifth of these lines (valid and invalid values mixed) are its own


def _run(main: Callable[[], None], args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr("sys.argv", ["estimate", *args])
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def test_the_script_prints_what_the_typer_command_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("ESTIMATOR_NO_CALIBRATION", "1")
    (tmp_path / "exists.json").write_text("{}")
    lines = [[*MODEL, "--gpu", "h100", *extra] for extra in (
        [], ["--format", "json"], ["--format=csv", "--units", "gib"], ["--explain", "--gpus", "2"],
        ["--dtype", "fp8", "--kv-dtype", "fp8", "--batch", "8", "--prompt-tokens", "8k", "--output-tokens", "512"],
        ["--group-size", "0", "--dtype", "gptq-int4"], ["--dtype", "gptq-int4", "--group-size", "64"],
        ["--mode", "train", "--zero", "3", "--dp", "8", "--format", "json"], ["--mode", "train", "--gpus", "2"],
        ["--format", "xlsx"], ["--mla-cache", "latent"], ["--gpu-memory", "40GB"], ["--profile", "nope"],
        ["--logits", "all", "--format", "json", "-o", str(tmp_path / "out.json")],
        ["-o", str(tmp_path / "missing" / "out.json")], ["--batch", "0"], ["--network", "8x400g-ib"],
        ["--format", "json", "-o", str(tmp_path / "exists.json")], ["-o", str(tmp_path / "out.json"), "--force"],
        ["--system", "hgx-h100", "--nodes", "2", "--gpus", "16"], ["--gpus-per-node", "4", "--gpus", "2"],
    )]
    lines += [["--model", "nonesuch", "--gpu", "h100"], ["--gpu", "h100"], ["--help"], [*MODEL, "--bogus"],
              [*MODEL, "--format", "yaml"], [*MODEL, "--group-size", "x"]]
    assert sum(parse(args) is not None for args in lines) >= 20
    for args in lines:
        fast = (*_run(estimate.estimate_main, args, monkeypatch), _taken(tmp_path / "out.json"))
        slow = (*_run(estimate.typer_main, args, monkeypatch), _taken(tmp_path / "out.json"))
        assert fast == slow, args


def _taken(path: Path) -> bytes | None:
    """The file's bytes (None when it was not written), the file removed."""
    if not path.exists():
        return None
    data = path.read_bytes()
    path.unlink()
    return data


def test_the_plain_path_imports_no_typer() -> None:
    import subprocess

    code = ("import sys; from estimator.cli.estimate import estimate_main; sys.argv = ['estimate', '--model', "
            "'llama-3.2-1b', '--gpu', 'h100', '--format', 'json']; estimate_main(); "
            "sys.stderr.write(' '.join(m for m in sys.modules if m.split('.')[0] in ('typer', 'rich')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("{") and done.stderr == ""


@pytest.mark.parametrize("raised", [EOFError(), KeyboardInterrupt(), BrokenPipeError(32, "Broken pipe"),
                                    PermissionError(13, "Permission denied", "x.json")])
def test_the_script_ends_as_the_typer_command_ends(raised: BaseException, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(params: dict[str, Any]) -> None:
        raise raised

    monkeypatch.setattr("estimator.cli.estimate.run_estimate", failing)
    args = [*MODEL, "--gpu", "h100"]
    assert parse(args) is not None
    fast = _run(estimate.estimate_main, args, monkeypatch)
    assert fast == _run(estimate.typer_main, args, monkeypatch)
    assert fast[0] != 0


@pytest.mark.parametrize("instruction", ["bash_source", "complete_bash", "zsh_complete"])
def test_a_completion_request_goes_to_typer(instruction: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_ESTIMATE_COMPLETE", instruction)
    monkeypatch.setenv("COMP_WORDS", "estimate --mo")
    monkeypatch.setenv("COMP_CWORD", "1")
    args = [*MODEL, "--gpu", "h100", "--format", "json"]
    assert estimate.completing()
    assert _run(estimate.estimate_main, args, monkeypatch) == _run(estimate.typer_main, args, monkeypatch)


def test_the_script_freezes_its_objects_at_exit_only() -> None:
    import subprocess

    # an exit handler registered before the script runs after the script's own (atexit runs them last in, first out)
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: sys.stderr.write(f'frozen at exit: {gc.get_freeze_count() > 0}'))\n"
            "from estimator.cli.estimate import estimate_main\n"
            "sys.argv = ['estimate', '--model', 'llama-3.2-1b', '--gpu', 'h100', '--format', 'json']\n"
            "estimate_main(); estimate_main()\n"
            "sys.stderr.write(f'frozen before: {gc.get_freeze_count() > 0}, collecting: {gc.isenabled()}; ')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("{")
    assert done.stderr == "frozen before: False, collecting: True; frozen at exit: True"
