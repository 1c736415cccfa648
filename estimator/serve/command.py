"""The `estimator serve` command: check the extra is installed, bind, print the URL, serve until Ctrl-C."""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path
from typing import Annotated

import typer

from estimator.errors import MissingDependency, WorkloadInvalid, echoed
from estimator.request.estimate import catalog_for
from estimator.request.options import OPTIONS

SpecsDir = Annotated[Path | None, typer.Option(*OPTIONS["specs_dir"].flags, help=OPTIONS["specs_dir"].help)]
INSTALL_HINT = "estimator serve needs FastAPI, fastapi-offline and uvicorn: pip install 'llm-estimator[serve]'"


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def bound_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port), so the URL printed is the one served."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except (OSError, OverflowError) as error:
        sock.close()  # not left to the garbage collector: a refused address leaks no socket
        raise WorkloadInvalid(f"cannot listen on {echoed(host)}:{port}: {getattr(error, 'strerror', None) or error}") \
            from None
    sock.listen(128)
    return sock


def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on. The default answers this machine only; another "
                                      "address lets anyone who can reach it use the server.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free port).")] = 8000,
    specs_dir: SpecsDir = None,
) -> None:
    """Serve the HTTP API (/v1/...) and the web page on this machine.

    \b
    Examples:
      estimator serve
      estimator serve --port 8000
      estimator serve --host 0.0.0.0 --port 8000 --specs-dir my-specs
    """
    try:
        import uvicorn

        from estimator.serve.app import create_app
    except ImportError:
        raise MissingDependency(INSTALL_HINT) from None
    if not 0 <= port <= 65535:
        raise WorkloadInvalid(f"--port must be 0-65535, got {port}")
    if not host.strip():  # the socket layer reads an empty address as every interface: said, never assumed
        raise WorkloadInvalid("--host is empty: give the address to listen on (127.0.0.1: this machine only; "
                              "0.0.0.0: every interface)")
    app = create_app(catalog_for(specs_dir))
    sock = bound_socket(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}/"
    if not _loopback(host):
        sys.stderr.write(f"warning: listening on {host}: anyone who can reach this machine can use the server\n")
    print(f"estimator serve: {url}  (API {url}v1/, docs {url}docs; Ctrl-C stops)", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
