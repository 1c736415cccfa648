"""`estimator serve` refuses an empty --host (the socket layer reads it as every interface) and echoes an address
it cannot listen on at most `ECHO_MAX` characters, in one line, before it listens."""

from __future__ import annotations

import pytest

from estimator.errors import ECHO_MAX, WorkloadInvalid


@pytest.mark.parametrize("host", ["", " "])
def test_an_empty_host_is_refused_not_read_as_every_interface(host: str) -> None:
    pytest.importorskip("uvicorn", reason="estimator serve needs the [serve] extra: pip install '.[serve]'")
    from estimator.serve.command import serve_command

    with pytest.raises(WorkloadInvalid, match="--host is empty"):
        serve_command(host=host, port=0)


def test_an_address_it_cannot_listen_on_is_echoed_short() -> None:
    from estimator.serve.command import bound_socket

    with pytest.raises(WorkloadInvalid) as refused:
        bound_socket("x" * 300, 0)
    message = str(refused.value)
    assert "\n" not in message and "x" * (ECHO_MAX + 1) not in message and "x" * (ECHO_MAX - 10) in message
