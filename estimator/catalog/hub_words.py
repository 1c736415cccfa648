"""Why a Hub id could not be read, in one line located at ``--model``: no such repository, gated, no such revision,
no config.json, no network, or offline and not cached. huggingface_hub's own messages run to several lines and
name its internals; each failure is worded here by its kind instead."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from estimator.catalog.hub_names import HubRef
from estimator.errors import EstimatorError, FieldInvalid, echoed

# transport failures, by class name: httpx2 / httpx (ConnectError, ReadTimeout, ...), requests (ConnectionError)
_NETWORK = {"TransportError", "RequestError", "TimeoutException", "ConnectionError", "Timeout", "ProxyError"}


class HubUnavailable(FieldInvalid):
    """A Hub id the Hub (or its cache) could not answer; ``kind`` says why, ``reason`` in words."""

    def __init__(self, text: str, kind: str, reason: str) -> None:
        self.kind = kind
        self.reason = reason
        super().__init__("model", "{model} {name}: {reason}", name=repr(echoed(text)), reason=reason)


class NoConfig(Exception):
    """The repository (at that revision) has no config.json."""


class NotCached(Exception):
    """Offline, and the model's files or headers are not in the caches."""


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _network(error: BaseException) -> BaseException | None:
    """The transport failure under ``error`` (refused, DNS, timeout), if it is one."""
    for link in _chain(error):
        if type(link).__module__.startswith("huggingface_hub"):
            continue  # its own errors are OSErrors too; the transport's is beneath them
        if isinstance(link, OSError) or any(c.__name__ in _NETWORK for c in type(link).__mro__):
            return link
    return None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return echoed(text[0]) if text else type(error).__name__


def unavailable(error: BaseException, ref: HubRef, endpoint: str, offline: bool,
                kind_of: Callable[[BaseException], str | None]) -> EstimatorError:
    """``error``, raised while ``ref`` was read, as one line (a spec error of the files themselves stays as it is)."""
    if isinstance(error, EstimatorError):
        return error
    kind = "no-config" if isinstance(error, NoConfig) else kind_of(error)
    if kind == "local":  # huggingface_hub found neither the Hub nor a cached copy
        kind = "not-cached" if offline else "network"
    network = _network(error)
    if kind in (None, "http") and network is not None:
        kind = "network"
    if isinstance(error, NotCached):
        kind = "not-cached"
    repo, label, at = ref.repo, ref.label, f"{endpoint}/{ref.repo}"
    status = getattr(getattr(error, "response", None), "status_code", None)
    reasons = {
        "missing": f"no model repository {repo} on the Hub ({endpoint}), or it is private (set HF_TOKEN to a token "
                   "that may read it)",
        "gated": f"{repo} is gated on the Hub: accept its licence at {at} and set HF_TOKEN to a token of that account",
        "revision": f"the Hub has no revision {ref.revision or 'main'!r} of {repo}",
        "no-config": f"{label} has no config.json on the Hub (a GGUF-only repository: download its .gguf file and "
                     "pass --model FILE.gguf)",
        "network": f"cannot reach the Hub at {endpoint} ({_first_line(network or error)}) and {label} is not cached; "
                   "check the network (HF_ENDPOINT names a mirror), or set HF_HUB_OFFLINE=1 to read the cache alone",
        "not-cached": f"HF_HUB_OFFLINE is set and {label} is not in the cache; run once online to cache it",
        "http": f"the Hub at {endpoint} refused the token (HTTP 401 for {label}): check HF_TOKEN, or unset it for a "
                "public model" if status == 401 else f"the Hub at {endpoint} answered HTTP {status} for {label}",
    }
    reason = reasons.get(kind or "", f"cannot read {label} from the Hub: {type(error).__name__}: "
                                     f"{_first_line(error)}")
    return HubUnavailable(ref.label, kind or "other", reason)
