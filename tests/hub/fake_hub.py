"""A fake Hugging Face Hub on loopback: the few routes huggingface_hub uses to read a model's files, with the headers
it expects of the real Hub.

- ``HEAD|GET /{org}/{name}/resolve/{revision}/{file}``: 200 with ``X-Repo-Commit``, ``ETag`` and ``Content-Length``;
  a safetensors file (an LFS file on the Hub) answers 302 to a content address on the same server (the Hub's CDN),
  with ``X-Linked-Etag`` and ``X-Linked-Size``; ``Range: bytes=a-b`` answers 206 with that slice.
- ``GET /api/models/{org}/{name}[/revision/{revision}]``: the repository's commit and files.
- Errors as the Hub words them (``X-Error-Code``): 404 RepoNotFound, 404 RevisionNotFound, 404 EntryNotFound (with
  the commit), 401 GatedRepo for a gated repository without the accepted token, 401 for a token it does not know.

Every request is recorded (method, path, range, bytes sent), so a test can say what was and was not fetched.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from tests.hub.checkpoints import Repo, Shard

TOKEN = "hf_fake_token_that_accepted_the_licence"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None
    sent: int  # body bytes sent


@dataclass
class FakeHub:
    repos: dict[str, Repo]
    url: str = ""
    log: list[Request] = field(default_factory=list)

    def served(self, suffix: str) -> list[Request]:
        """The requests for paths ending in ``suffix`` that were answered with a body."""
        return [r for r in self.log if r.path.endswith(suffix) and r.sent]


def _etag(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub

    def log_message(self, format: str, *args: object) -> None:
        del format, args  # quiet: the test output is the estimator's

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _send(self, status: int, headers: dict[str, str], body: bytes = b"", *, send_body: bool = True) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        sent = body if send_body else b""
        if sent:
            self.wfile.write(sent)
        self.hub.log.append(Request(self.command, urlsplit(self.path).path, self.headers.get("Range"), len(sent)))

    def _error(self, status: int, code: str, commit: str | None = None) -> None:
        headers = {"X-Error-Code": code, "X-Error-Message": code, "Content-Length": "0"}
        if commit is not None:
            headers["X-Repo-Commit"] = commit
        self._send(status, headers)

    def _answer(self, body: bool) -> None:
        parts = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
        if parts[:2] == ["api", "models"]:
            return self._api(parts[2:])
        if parts[:1] == ["cdn"] and len(parts) >= 5:
            return self._file("/".join(parts[1:3]), parts[3], "/".join(parts[4:]), body, cdn=True)
        if len(parts) >= 5 and parts[2] == "resolve":
            return self._file("/".join(parts[:2]), parts[3], "/".join(parts[4:]), body, cdn=False)
        return self._error(404, "RepoNotFound")

    def _commit(self, repo_id: str, revision: str) -> tuple[Repo, str] | None:
        """The repository and the commit ``revision`` names, or None once an error is sent."""
        given = self.headers.get("Authorization")
        if given is not None and given != f"Bearer {TOKEN}":  # the Hub refuses an unknown token outright
            self._send(401, {"X-Error-Message": "Invalid credentials in Authorization header", "Content-Length": "0"})
            return None
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound")
            return None
        if repo.gated and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._error(401, "GatedRepo")
            return None
        commit = repo.refs.get(revision, revision if revision in repo.commits else None)
        if commit is None:
            self._error(404, "RevisionNotFound")
            return None
        return repo, commit

    def _file(self, repo_id: str, revision: str, name: str, body: bool, cdn: bool) -> None:
        found = self._commit(repo_id, revision)
        if found is None:
            return
        repo, commit = found
        content = repo.commits[commit].get(name)
        if content is None:
            return self._error(404, "EntryNotFound", commit)
        data = content if isinstance(content, bytes) else None
        size = len(data) if data is not None else content.size  # type: ignore[union-attr]
        etag = _etag(data if data is not None else content.header)  # type: ignore[union-attr]
        if isinstance(content, Shard) and not cdn:  # an LFS file: the Hub redirects to its content store
            return self._send(302, {"Location": f"{self.hub.url}/cdn/{repo_id}/{commit}/{name}",
                                    "X-Repo-Commit": commit, "X-Linked-Etag": f'"{etag}"',
                                    "X-Linked-Size": str(size), "ETag": f'"{etag}"', "Content-Length": "0"})
        self._content(content, commit, etag, size, body)

    def _content(self, content: bytes | Shard, commit: str, etag: str, size: int, body: bool) -> None:
        start, end, status = 0, size - 1, 200
        asked = self.headers.get("Range")
        if asked and asked.startswith("bytes="):
            first, _, last = asked[len("bytes="):].partition("-")
            start, end, status = int(first), min(int(last) if last else size - 1, size - 1), 206
        chunk = content[start:end + 1] if isinstance(content, bytes) else content.read(start, end)
        headers = {"X-Repo-Commit": commit, "ETag": f'"{etag}"', "Content-Length": str(len(chunk)),
                   "Accept-Ranges": "bytes"}
        if status == 206:
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        self._send(status, headers, chunk, send_body=body)

    def _api(self, parts: list[str]) -> None:
        repo_id = "/".join(parts[:2])
        revision = parts[3] if len(parts) >= 4 and parts[2] == "revision" else "main"
        found = self._commit(repo_id, revision)
        if found is None:
            return
        repo, commit = found
        info = {"id": repo_id, "modelId": repo_id, "sha": commit, "private": False, "gated": repo.gated,
                "siblings": [{"rfilename": name} for name in sorted(repo.commits[commit])]}
        raw = json.dumps(info).encode()
        self._send(200, {"Content-Type": "application/json", "Content-Length": str(len(raw))}, raw,
                   send_body=self.command == "GET")


@contextmanager
def serving(repos: dict[str, Repo]) -> Iterator[FakeHub]:
    """The fake Hub of ``repos`` on an ephemeral loopback port, for the ``with`` block."""
    hub = FakeHub(repos)
    handler = type("Handler", (_Handler,), {"hub": hub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
