"""The `estimator` program (and ``python -m estimator``): the CLI's commands, and `serve`, the HTTP front end, a
sibling of the CLI that this module registers on the CLI's app (neither front end imports the other)."""

from estimator.cli.main import app
from estimator.cli.main import main as _cli_main
from estimator.cli.process import signals_end_like_interrupts, without_pydantic_plugins
from estimator.serve.command import serve_command

app.command("serve")(serve_command)


def main() -> None:
    """`estimator` console script (pydantic's plugin search off while it runs: `process.without_pydantic_plugins`;
    SIGTERM and SIGHUP end it like Ctrl-C: `process.signals_end_like_interrupts`)."""
    with signals_end_like_interrupts(), without_pydantic_plugins():
        _cli_main()


if __name__ == "__main__":
    main()
