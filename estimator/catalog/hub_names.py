"""Which model names are Hugging Face Hub ids (``org/name``, ``org/name@revision``, ``hf:org/name``, or the
repository's address), told apart from a local path, a catalog name and a size without importing anything.

A name is read in this order (`estimator.catalog.registry.Catalog.model`): a path that exists, or a name ending in
``.json`` or ``.gguf``, or one starting with ``.``, ``/`` or ``~``, is a local file; a size such as ``70b`` is a
generic model; then a Hub id as this module reads it; else a catalog name or alias. A Hub id is read from the Hub
(`estimator.catalog.hub`); when the Hub cannot answer and the catalog knows the id as an alias (the catalog lists
``openai/gpt-oss-120b``), the catalog's entry answers and the report says so, unless the name asks for the Hub
alone: an ``hf:`` prefix, or a pinned ``@revision`` (a catalog entry has no revisions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The Hub's repository names: letters, digits, '-', '_', '.'; at most 96 characters; no '--' or '..'; neither end
# a '-' or '.' (huggingface_hub.utils._validators.validate_repo_id, REPO_ID_REGEX).
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_REVISION = r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}"  # a branch, tag or commit; refs/pr/1 holds slashes
_ID = re.compile(rf"^(?P<repo>{_PART}/{_PART})(?:@(?P<revision>{_REVISION}))?$")
# a browser's address of a repository: https://huggingface.co/org/name, /tree/<revision> or /blob/<revision>/...
_ADDRESS = re.compile(rf"^(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/(?P<repo>{_PART}/{_PART})"
                      rf"(?:/(?:tree|blob|resolve)/(?P<revision>[A-Za-z0-9._-]+))?(?:/[^?#\s]*)?/?$", re.IGNORECASE)
PREFIX = "hf:"


@dataclass(frozen=True)
class HubRef:
    """A repository on the Hub and the revision asked for (None: the default branch, ``main``)."""

    repo: str
    revision: str | None = None
    pinned: bool = False  # asked for the Hub alone (``hf:`` prefix or a revision): no catalog entry stands in

    @property
    def label(self) -> str:
        """``org/name`` or ``org/name@revision``, as the user wrote it."""
        return self.repo if self.revision is None else f"{self.repo}@{self.revision}"


def hub_reference(text: str) -> HubRef | None:
    """The Hub repository ``text`` names, or None when it is not a Hub id (a catalog name, size or path)."""
    name = text.strip()
    forced = name.lower().startswith(PREFIX)
    if forced:
        name = name[len(PREFIX):].lstrip("/")
    address = _ADDRESS.match(name)
    found = address or _ID.match(name)
    if found is None or ".." in found["repo"] or "--" in found["repo"]:
        return None
    revision = found["revision"]
    if revision is not None and (".." in revision or revision.endswith(("/", ".lock"))):
        return None
    return HubRef(found["repo"], revision, pinned=forced or revision is not None)
