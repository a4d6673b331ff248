"""A local, offline Hugging Face Hub for tests: push to it, then load from it in a fresh process.

Two servers, both on 127.0.0.1 and both stopped when the context manager exits:

* olah (``pip install olah``), a Hub mirror that in offline mode serves git repositories found on disk under
  ``<root>/mirrors/<models|datasets|spaces>/<namespace>/<name>``. It answers the read API: repo info,
  ``/tree``, ``/paths-info``, ``/resolve`` (what ``hf_hub_download``, ``list_repo_files`` and
  ``from_pretrained`` use). It runs as a subprocess.
* a small stdlib HTTP endpoint in front of it (a thread in the calling process). It implements the write calls
  ``huggingface_hub`` makes for ``create_repo`` / ``upload_folder`` / ``push_to_hub``: ``POST /api/repos/create``,
  ``DELETE /api/repos/delete``, ``POST /api/validate-yaml``, ``POST /api/{type}s/{ns}/{name}/preupload/{rev}``
  (every file is ``regular``: no LFS, no Xet) and ``POST /api/{type}s/{ns}/{name}/commit/{rev}`` (each commit
  becomes a real git commit, written with ``git fast-import``, in olah's mirrors path), plus ``/api/whoami-v2``.
  Every other request goes to olah, with its quirks papered over: ``GET /api/models/{ns}/{name}`` without a
  revision is rewritten to ``/revision/main``, ``/tree/{rev}`` gets the trailing slash olah redirects to, a missing
  repo answers ``404 RepoNotFound``, a missing revision ``404 RevisionNotFound`` and a missing file in an existing
  repo ``404 EntryNotFound`` (olah says ``401 RepoNotFound`` or ``500``).

Write calls need ``Authorization: Bearer <hub.token>``; a missing or different token gets ``401``.

Usage::

    from tests.hub.server import local_hub

    def test_round_trip(tmp_path, monkeypatch):
        with local_hub(tmp_path) as hub:
            # 1. explicit endpoint and token: always works, in process
            api = hub.api()                     # HfApi(endpoint=hub.endpoint, token=hub.token)
            api.create_repo("user/tiny")

            # 2. in process, for code that does not take an endpoint (model.push_to_hub, module-level
            #    huggingface_hub functions): huggingface_hub reads HF_ENDPOINT at import time, so setting the
            #    environment is not enough; hub.apply() sets it AND patches huggingface_hub.constants, the
            #    module-level HfApi and transformers' cached HfApi.
            hub.apply(monkeypatch)
            model.push_to_hub("user/tiny")

            # 3. a fresh process (the honest check of from_pretrained, required for trust_remote_code):
            subprocess.run([sys.executable, "-c", code], env=hub.subprocess_env(), check=True)

``hub.env`` is the dict of variables to set (HF_ENDPOINT, HF_TOKEN, HF_HOME, HF_HUB_DISABLE_XET,
HF_HUB_DISABLE_TELEMETRY); ``hub.unset_env`` names the ones to remove (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE, cache
overrides...). ``hub.subprocess_env()`` is ``os.environ`` with both applied; ``hub.new_hf_home()`` makes a fresh,
empty HF_HOME (pass it to ``subprocess_env``/``apply`` to be sure nothing is served from a cache).

Offline mode (``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``) would refuse even these loopback calls:
``subprocess_env()`` leaves those variables out, and ``allow_loopback_only(monkeypatch)`` clears them for the
calling process, where huggingface_hub has already read them into ``huggingface_hub.constants.HF_HUB_OFFLINE``,
and refuses any connection that is not to a loopback address (tests/conftest.py's ``local_hub_environment``).

``python -m tests.hub.server DIR`` runs the pair until Ctrl-C, for poking at it by hand.

Requires ``olah`` (and so GitPython) and the ``git`` executable.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import http.server
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


DEFAULT_TOKEN = "hf_local_hub_test_token"
DEFAULT_USER = "user"
REPO_TYPES = ("models", "datasets", "spaces")

# What huggingface_hub reads as offline mode, once, at import: into huggingface_hub.constants.HF_HUB_OFFLINE, which
# transformers asks too.
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
# Variables that would make huggingface_hub / transformers / datasets ignore the local hub or HF_HOME.
UNSET_ENV = (
    *OFFLINE_ENV,
    "HF_DATASETS_OFFLINE",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_ASSETS_CACHE",
    "HF_XET_CACHE",
    "HF_TOKEN_PATH",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_OIDC_RESOURCE",
    "TRANSFORMERS_CACHE",
    "HF_MODULES_CACHE",
    "HUGGINGFACE_CO_STAGING",
)

GITATTRIBUTES = b"""*.7z filter=lfs diff=lfs merge=lfs -text
*.bin filter=lfs diff=lfs merge=lfs -text
*.ckpt filter=lfs diff=lfs merge=lfs -text
*.h5 filter=lfs diff=lfs merge=lfs -text
*.npy filter=lfs diff=lfs merge=lfs -text
*.onnx filter=lfs diff=lfs merge=lfs -text
*.pt filter=lfs diff=lfs merge=lfs -text
*.pth filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
*.zip filter=lfs diff=lfs merge=lfs -text
"""

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_API_RE = re.compile(r"^/api/(models|datasets|spaces)/([^/]+)/([^/]+)(?:/(.*))?$")
_RESOLVE_RE = re.compile(r"^/(?:(datasets|spaces)/)?([^/]+)/([^/]+)/resolve/([^/]+)/(.+)$")
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "server",
    "date",
}


# --------------------------------------------------------------------------------------------------------------------
# git storage: one bare repository per Hub repo, written with git plumbing only.


class HubError(Exception):
    """An error answered to the client, with the Hub's X-Error-Code when it has one."""

    def __init__(self, status: int, message: str, code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.extra = extra or {}


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return env


class GitStore:
    """Bare git repositories under ``<mirrors>/<type>/<ns>/<name>``, the layout olah serves."""

    def __init__(self, mirrors: Path, user: str):
        self.mirrors = mirrors
        self.user = user
        self.lock = threading.Lock()
        self._env = _git_env()

    def path(self, repo_type: str, ns: str, name: str) -> Path:
        for part in (ns, name):
            if not _NAME_RE.match(part) or ".." in part or part.endswith(".git"):
                raise HubError(400, f"Invalid repo name part: {part!r}")
        if repo_type not in REPO_TYPES:
            raise HubError(400, f"Invalid repo type: {repo_type!r}")
        return self.mirrors / repo_type / ns / name

    def exists(self, repo_type: str, ns: str, name: str) -> bool:
        try:
            return (self.path(repo_type, ns, name) / "HEAD").is_file()
        except HubError:
            return False

    def _git(self, repo: Path, *args: str, input: bytes | None = None, check: bool = True):
        proc = subprocess.run(
            ["git", f"--git-dir={repo}", *args],
            check=False,
            input=input,
            capture_output=True,
            env=self._env,
            timeout=60,
        )
        if check and proc.returncode != 0:
            raise HubError(500, f"git {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
        return proc

    def resolve(self, repo: Path, revision: str) -> str | None:
        """The commit sha a branch, tag or sha names, or None."""
        if not revision or revision.startswith("-"):
            return None
        proc = self._git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}", check=False)
        if proc.returncode != 0:
            return None
        return proc.stdout.decode().strip() or None

    def files(self, repo: Path, commit: str) -> dict[str, str]:
        """path -> blob sha of every file at ``commit``."""
        out = self._git(repo, "ls-tree", "-r", "-z", commit).stdout.decode("utf-8", errors="surrogateescape")
        files = {}
        for entry in filter(None, out.split("\0")):
            meta, path = entry.split("\t", 1)
            files[path] = meta.split()[2]
        return files

    def has_path(self, repo: Path, commit: str, path: str) -> bool:
        proc = self._git(repo, "cat-file", "-e", f"{commit}:{path}", check=False)
        return proc.returncode == 0

    def create(self, repo_type: str, ns: str, name: str) -> None:
        repo = self.path(repo_type, ns, name)
        repo.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            ["git", "init", "--quiet", "--bare", "--initial-branch=main", str(repo)],
            check=False,
            capture_output=True,
            env=self._env,
            timeout=60,
        )
        if proc.returncode != 0:
            raise HubError(500, f"git init failed: {proc.stderr.decode(errors='replace').strip()}")
        # Like the Hub: a new repo has one commit with a .gitattributes file.
        self.commit(repo, "main", None, "initial commit", [("add", ".gitattributes", GITATTRIBUTES)])

    def commit(self, repo: Path, branch: str, parent: str | None, message: str, ops: list[tuple]) -> str:
        """Write one commit on ``branch`` (after ``parent``) and return its sha.

        ``ops``: ``("add", path, bytes)``, ``("delete", path, None)`` (a file or a whole folder).
        """
        now = int(time.time())
        ident = f"{self.user} <{self.user}@localhost> {now} +0000"
        msg = message.encode()
        lines = [f"commit refs/heads/{branch}\n".encode(), f"committer {ident}\n".encode()]
        lines.append(b"data %d\n" % len(msg) + msg + b"\n")
        if parent is not None:
            lines.append(f"from {parent}\n".encode())
        for kind, path, content in ops:
            quoted = _fast_import_path(path)
            if kind == "add":
                lines.append(b"M 100644 inline " + quoted + b"\n")
                lines.append(b"data %d\n" % len(content) + content + b"\n")
            else:
                lines.append(b"D " + quoted + b"\n")
        lines.append(b"done\n")
        self._git(repo, "fast-import", "--quiet", "--done", input=b"".join(lines))
        sha = self.resolve(repo, f"refs/heads/{branch}")
        if sha is None:
            raise HubError(500, "git fast-import wrote no commit")
        return sha


def _fast_import_path(path: str) -> bytes:
    escaped = path.replace("\\", "\\\\").replace('"', '\\"')
    return b'"' + escaped.encode("utf-8") + b'"'


def _check_repo_path(path: str) -> str:
    if not isinstance(path, str) or not path:
        raise HubError(400, "A file operation has no path")
    path = path.removeprefix("./")
    parts = path.split("/")
    if any(p in ("", ".", "..", ".git") for p in parts) or any(ord(c) < 32 for c in path):
        raise HubError(400, f"Invalid path in repo: {path!r}")
    return path


# --------------------------------------------------------------------------------------------------------------------
# The HTTP endpoint.


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HubHTTPServer

    # -- plumbing ----------------------------------------------------------------------------------------------------

    def log_message(self, format, *args):
        self.server.log(f"{self.address_string()} {format % args}")

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _json(self, status: int, data) -> None:
        self._send(status, json.dumps(data).encode(), {"Content-Type": "application/json"})

    def _error(self, err: HubError) -> None:
        headers = {"Content-Type": "application/json", "X-Error-Message": err.message}
        if err.code:
            headers["X-Error-Code"] = err.code
        self._send(err.status, json.dumps({"error": err.message, **err.extra}).encode(), headers)

    def _require_token(self) -> None:
        auth = self.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise HubError(401, "Invalid credentials in Authorization header")
        if token.strip() != self.server.token:
            raise HubError(401, "Invalid credentials in Authorization header")

    def _dispatch(self) -> None:
        body = self._body()
        try:
            url = urllib.parse.urlsplit(self.path)
            path, query = url.path, urllib.parse.parse_qs(url.query)
            handler = self._route(path)
            if handler is None:
                self._forward(path, url.query, body)
            else:
                handler(path, query, body)
        except HubError as err:
            self._error(err)
        except Exception as err:  # noqa: BLE001 - report, do not kill the thread
            self.server.log(f"error handling {self.command} {self.path}: {err!r}")
            self._error(HubError(500, f"local hub: {type(err).__name__}: {err}"))

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

    def _route(self, path: str):
        method = self.command
        if method == "POST" and path == "/api/repos/create":
            return self._create_repo
        if method == "DELETE" and path == "/api/repos/delete":
            return self._delete_repo
        if method == "POST" and path == "/api/validate-yaml":
            return self._validate_yaml
        if method in ("GET", "HEAD") and path == "/api/whoami-v2":
            return self._whoami
        match = _API_RE.match(path)
        if match and method == "POST" and match.group(4):
            action = match.group(4).split("/", 1)[0]
            if action == "preupload":
                return self._preupload
            if action == "commit":
                return self._commit
        return None

    # -- write API ---------------------------------------------------------------------------------------------------

    def _repo_from_payload(self, body: bytes) -> tuple[str, str, str]:
        try:
            payload = json.loads(body or b"{}")
        except ValueError as err:
            raise HubError(400, f"Invalid JSON body: {err}") from err
        name = payload.get("name")
        ns = payload.get("organization") or self.server.user
        if isinstance(name, str) and "/" in name and not payload.get("organization"):
            ns, name = name.split("/", 1)
        repo_type = (payload.get("type") or "model") + "s"
        if not isinstance(name, str):
            raise HubError(400, "Missing repo name")
        self.server.store.path(repo_type, ns, name)  # validates
        return repo_type, ns, name

    def _repo_url(self, repo_type: str, ns: str, name: str) -> str:
        prefix = "" if repo_type == "models" else f"{repo_type}/"
        return f"{self.server.endpoint}/{prefix}{ns}/{name}"

    def _create_repo(self, path, query, body):
        self._require_token()
        repo_type, ns, name = self._repo_from_payload(body)
        store = self.server.store
        url = self._repo_url(repo_type, ns, name)
        with store.lock:
            if store.exists(repo_type, ns, name):
                # huggingface_hub's create_repo(exist_ok=True) reads "url" from the 409 answer.
                raise HubError(409, f"You already created this {repo_type[:-1]} repo", extra={"url": url})
            store.create(repo_type, ns, name)
        self._json(200, {"url": url, "name": f"{ns}/{name}", "id": f"{ns}/{name}"})

    def _delete_repo(self, path, query, body):
        self._require_token()
        repo_type, ns, name = self._repo_from_payload(body)
        store = self.server.store
        with store.lock:
            if not store.exists(repo_type, ns, name):
                raise HubError(404, f"Repository not found: {ns}/{name}", "RepoNotFound")
            shutil.rmtree(store.path(repo_type, ns, name))
        self._send(200)

    def _validate_yaml(self, path, query, body):
        self._require_token()
        self._json(200, {"errors": [], "warnings": []})

    def _whoami(self, path, query, body):
        self._require_token()
        user = self.server.user
        self._json(
            200,
            {
                "type": "user",
                "id": "0" * 24,
                "name": user,
                "fullname": user,
                "email": None,
                "emailVerified": False,
                "isPro": False,
                "orgs": [],
                "auth": {"type": "access_token", "accessToken": {"displayName": "local-hub", "role": "write"}},
            },
        )

    def _existing_repo(self, path: str) -> tuple[Path, str, str]:
        """(repo dir, revision, "ns/name") of /api/{type}s/{ns}/{name}/{action}/{revision}."""
        match = _API_RE.match(path)
        repo_type, ns, name, rest = match.groups()
        parts = rest.split("/")
        if len(parts) != 2 or not parts[1]:
            raise HubError(400, f"Expected /api/{repo_type}/{{ns}}/{{name}}/{parts[0]}/{{revision}}")
        store = self.server.store
        if not store.exists(repo_type, ns, name):
            raise HubError(404, f"Repository not found: {ns}/{name}", "RepoNotFound")
        return store.path(repo_type, ns, name), urllib.parse.unquote(parts[1]), f"{ns}/{name}"

    def _preupload(self, path, query, body):
        self._require_token()
        repo, revision, _ = self._existing_repo(path)
        try:
            files = json.loads(body or b"{}").get("files", [])
        except ValueError as err:
            raise HubError(400, f"Invalid JSON body: {err}") from err
        store = self.server.store
        sha = store.resolve(repo, revision)
        remote = store.files(repo, sha) if sha else {}
        answer = [
            {
                "path": f["path"],
                "uploadMode": "regular",  # never LFS/Xet: every file goes inline in the commit
                "shouldIgnore": False,
                "oid": remote.get(f["path"]),
            }
            for f in files
        ]
        self._json(200, {"files": answer, "commitOid": sha})

    def _commit(self, path, query, body):
        self._require_token()
        repo, revision, repo_id = self._existing_repo(path)
        if query.get("create_pr", ["0"])[0] not in ("0", "", "false", "False"):
            raise HubError(400, "The local hub does not support pull requests (create_pr)")
        try:
            items = [json.loads(line) for line in body.splitlines() if line.strip()]
        except ValueError as err:
            raise HubError(400, f"Invalid NDJSON body: {err}") from err
        if not items or items[0].get("key") != "header":
            raise HubError(400, "The commit payload must start with a header line")
        header = items[0].get("value") or {}
        message = header.get("summary") or "Upload files"
        if header.get("description"):
            message += "\n\n" + header["description"]

        store = self.server.store
        with store.lock:
            head = store.resolve(repo, f"refs/heads/{revision}")
            if head is None:
                raise HubError(404, f"Invalid rev id: {revision} (not a branch of {repo_id})", "RevisionNotFound")
            parent = header.get("parentCommit")
            if parent and store.resolve(repo, parent) != head:
                raise HubError(412, f"A commit has happened since {parent}: the branch head is now {head}")
            current = store.files(repo, head)
            ops = []
            for item in items[1:]:
                key, value = item.get("key"), item.get("value") or {}
                file_path = _check_repo_path(value.get("path"))
                if key == "file":
                    if value.get("encoding", "base64") != "base64":
                        raise HubError(400, f"Unsupported encoding {value.get('encoding')!r} for {file_path}")
                    ops.append(("add", file_path, base64.b64decode(value.get("content", ""))))
                elif key == "deletedFile":
                    if file_path not in current:
                        raise HubError(404, f"File not found in repo: {file_path}", "EntryNotFound")
                    ops.append(("delete", file_path, None))
                elif key == "deletedFolder":
                    if not any(p.startswith(file_path + "/") for p in current):
                        raise HubError(404, f"Folder not found in repo: {file_path}", "EntryNotFound")
                    ops.append(("delete", file_path, None))
                elif key in ("lfsFile", "xetFile"):
                    raise HubError(400, f"The local hub stores no LFS/Xet files ({file_path}); it answers 'regular'")
                else:
                    raise HubError(400, f"Unknown commit operation {key!r}")
            sha = store.commit(repo, revision, head, message, ops)
        self._json(
            200,
            {
                "success": True,
                "commitOid": sha,
                "commitUrl": f"{self._repo_url(*self._api_parts(path))}/commit/{sha}",
                "commitMessage": message,
                "pullRequestUrl": None,
            },
        )

    @staticmethod
    def _api_parts(path: str) -> tuple[str, str, str]:
        return _API_RE.match(path).groups()[:3]

    # -- read API: forwarded to olah ---------------------------------------------------------------------------------

    def _forward(self, path: str, query: str, body: bytes) -> None:
        store = self.server.store
        target = path
        repo_ref = None  # (repo_type, ns, name, kind, revision)
        if match := _API_RE.match(path):
            repo_type, ns, name, rest = match.groups()
            if not rest and self.command in ("GET", "HEAD"):
                target = f"/api/{repo_type}/{ns}/{name}/revision/main"  # olah: no revision -> 401
                rest = "revision/main"
            parts = (rest or "").split("/", 2)
            kind = parts[0]
            revision = urllib.parse.unquote(parts[1]) if len(parts) > 1 and parts[1] else None
            if kind == "tree" and len(parts) == 2:
                target = target.rstrip("/") + "/"  # olah: /tree/{rev} -> 307 to /tree/{rev}/
            repo_ref = (repo_type, ns, name, kind, revision)
        elif match := _RESOLVE_RE.match(path):
            repo_type, ns, name, revision, _ = match.groups()
            repo_ref = (f"{repo_type}" if repo_type else "models", ns, name, "resolve", urllib.parse.unquote(revision))

        if repo_ref is not None and not store.exists(*repo_ref[:3]):
            raise HubError(404, f"Repository not found: {repo_ref[1]}/{repo_ref[2]}", "RepoNotFound")

        status, reason, headers, payload = self._olah(target + (f"?{query}" if query else ""), body)

        if status >= 400 and repo_ref is not None:
            repo_type, ns, name, kind, revision = repo_ref
            repo = store.path(repo_type, ns, name)
            if revision is not None and store.resolve(repo, revision) is None:
                raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
            if kind in ("resolve", "tree", "paths-info"):
                raise HubError(404, f"Entry not found: {urllib.parse.unquote(path)}", "EntryNotFound")

        if status == 200 and repo_ref is not None and repo_ref[3] == "commits" and payload:
            payload = _fix_commits(payload, headers)

        self.send_response(status, reason)
        for key, value in headers:
            if key.lower() in _HOP_BY_HOP:
                continue
            if key.lower() == "location":
                value = value.replace(self.server.olah_endpoint, self.server.endpoint)
            self.send_header(key, value)
        if self.command == "HEAD":
            length = next((v for k, v in headers if k.lower() == "content-length"), "0")
            self.send_header("Content-Length", length)
            self.end_headers()
        else:
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    def _olah(self, target: str, body: bytes):
        host, port = self.server.olah_address
        conn = http.client.HTTPConnection(host, port, timeout=120)
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in _HOP_BY_HOP and k.lower() not in ("host", "authorization")
        }
        headers["Host"] = self.server.netloc  # URLs olah builds point back at this endpoint
        try:
            conn.request(self.command, target, body=body if body else None, headers=headers)
            resp = conn.getresponse()
            payload = resp.read() if self.command != "HEAD" else b""
            return resp.status, resp.reason, resp.getheaders(), payload
        except OSError as err:
            raise HubError(502, f"local hub: olah did not answer {self.command} {target}: {err}") from err
        finally:
            conn.close()


def _fix_commits(payload: bytes, headers: list[tuple[str, str]]) -> bytes:
    """olah's /commits answer: authors lack the "user" key list_repo_commits reads; the title is the whole message."""
    if any(k.lower() == "content-encoding" and v.lower() != "identity" for k, v in headers):
        return payload
    try:
        commits = json.loads(payload)
    except ValueError:
        return payload
    if not isinstance(commits, list):
        return payload
    for commit in commits:
        if not isinstance(commit, dict):
            continue
        for author in commit.get("authors") or []:
            if isinstance(author, dict):
                author.setdefault("user", author.get("name"))
        title, _, message = (commit.get("title") or "").strip().partition("\n")
        commit["title"] = title
        commit["message"] = commit.get("message") or message.strip()
    return json.dumps(commits).encode()


class _HubHTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, store: GitStore, token: str, user: str, log_path: Path):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.store = store
        self.token = token
        self.user = user
        self.netloc = f"127.0.0.1:{self.server_address[1]}"
        self.endpoint = f"http://{self.netloc}"
        self.olah_address: tuple[str, int] = ("127.0.0.1", 0)
        self.olah_endpoint = ""
        self._log_file = open(log_path, "a", buffering=1)  # noqa: SIM115 - closed in server_close
        self._log_lock = threading.Lock()

    def log(self, line: str) -> None:
        with self._log_lock:
            if not self._log_file.closed:
                self._log_file.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    def server_close(self):
        super().server_close()
        with self._log_lock:
            self._log_file.close()


# --------------------------------------------------------------------------------------------------------------------
# olah, as a subprocess.


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Linux: olah gets SIGTERM if the test process dies, so no server outlives a killed pytest."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001, S110 - best effort
        pass


def _write_olah_config(path: Path, port: int, root: Path, mirrors: Path, front_netloc: str) -> None:
    path.write_text(
        "\n".join(
            [
                "[basic]",
                'host = "127.0.0.1"',
                f"port = {port}",
                f"repos-path = {json.dumps(str(root / 'olah-cache'))}",
                f"mirrors-path = [{json.dumps(str(mirrors))}]",
                # URLs olah generates (redirects, LFS) must point at the front endpoint, not at olah.
                f'mirror-netloc = "{front_netloc}"',
                f'mirror-lfs-netloc = "{front_netloc}"',
                "metadata-cache-ttl = 0",
                "",
                "[accessibility]",
                "offline = true",
                "",
            ]
        )
    )


def _olah_answers(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        # Any HTTP answer means it is up (olah's "/" page itself answers 500 with current jinja2).
        conn.request("GET", "/api/models/local-hub/probe/revision/main")
        conn.getresponse().read()
        return True
    except OSError:
        return False
    finally:
        conn.close()


def _start_olah(root: Path, mirrors: Path, front_netloc: str, timeout: float) -> tuple[subprocess.Popen, int]:
    try:
        import olah  # noqa: F401
    except ImportError as err:  # pragma: no cover
        raise RuntimeError("The local hub needs olah: pip install olah") from err
    if shutil.which("git") is None:  # pragma: no cover
        raise RuntimeError("The local hub needs the git executable")
    last_log = ""
    linux_main_thread = sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread()
    for _attempt in range(3):
        port = _free_port()
        config = root / "olah.toml"
        _write_olah_config(config, port, root, mirrors, front_netloc)
        log_path = root / "olah.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "olah.server", "-c", str(config), "--log-path", str(root / "olah-logs")],
                cwd=root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={k: v for k, v in os.environ.items() if not k.startswith(("HF_", "OLAH_"))},
                # Only from the main thread: PR_SET_PDEATHSIG fires when the *thread* that started olah ends.
                preexec_fn=_die_with_parent if linux_main_thread else None,  # noqa: PLW1509
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            if _olah_answers(port):
                return proc, port
            time.sleep(0.1)
        _stop_process(proc)
        last_log = log_path.read_text(errors="replace")[-3000:]
        if "address already in use" not in last_log.lower():
            break
    raise RuntimeError(
        f"olah did not start within {timeout:.0f} s (exit code {proc.returncode}); the end of {root / 'olah.log'}:\n"
        f"{last_log}"
    )


def _stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


# --------------------------------------------------------------------------------------------------------------------
# The public helper.


@dataclass
class LocalHub:
    """A running local hub. ``endpoint``/``token`` for HfApi; ``env`` for processes (see the module docstring)."""

    root: Path
    endpoint: str
    token: str
    user: str
    olah_endpoint: str
    mirrors_path: Path
    hf_home: Path
    env: dict[str, str] = field(default_factory=dict)
    unset_env: tuple[str, ...] = UNSET_ENV
    _homes: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False)

    def api(self, token: str | None = None):
        """``HfApi(endpoint=self.endpoint, token=token or self.token)``."""
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.endpoint, token=token or self.token)

    def new_hf_home(self) -> Path:
        """A fresh, empty HF_HOME directory (no cached files, no cached dynamic modules)."""
        home = self.root / f"hf_home_{next(self._homes)}"
        home.mkdir()
        return home

    def env_for(self, hf_home: Path | None = None) -> dict[str, str]:
        """The variables to set, with ``hf_home`` (default: ``self.hf_home``) as HF_HOME."""
        return {**self.env, "HF_HOME": str(hf_home or self.hf_home)}

    def subprocess_env(self, hf_home: Path | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
        """``os.environ`` (or ``base``) with the hub's variables set and ``unset_env`` removed: pass as ``env=``."""
        env = {k: v for k, v in (os.environ if base is None else base).items() if k not in self.unset_env}
        env.update(self.env_for(hf_home))
        return env

    def apply(self, monkeypatch, hf_home: Path | None = None) -> None:
        """Point this process's huggingface_hub (and transformers, if imported) at the hub, undone by monkeypatch.

        huggingface_hub copies HF_ENDPOINT, HF_HOME, ... into ``huggingface_hub.constants`` at import time and its
        module-level ``HfApi`` (``huggingface_hub.create_repo`` and friends) keeps the endpoint it was created with,
        so this sets the environment *and* patches those. Loading remote code (``trust_remote_code``) in process is
        not covered: transformers fixes its modules cache at import; use ``subprocess_env()`` for that.
        """
        from huggingface_hub import constants, hf_api

        env = self.env_for(hf_home)
        for key in self.unset_env:
            monkeypatch.delenv(key, raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        home = env["HF_HOME"]
        patches = {
            "ENDPOINT": self.endpoint,
            "HUGGINGFACE_CO_URL_TEMPLATE": self.endpoint + "/{repo_id}/resolve/{revision}/{filename}",
            "HF_HOME": home,
            "HF_HUB_CACHE": os.path.join(home, "hub"),
            "HF_ASSETS_CACHE": os.path.join(home, "assets"),
            "HF_XET_CACHE": os.path.join(home, "xet"),
            "HF_TOKEN_PATH": os.path.join(home, "token"),
            "HF_STORED_TOKENS_PATH": os.path.join(home, "stored_tokens"),
            "HF_HUB_OFFLINE": False,
            "HF_HUB_DISABLE_XET": True,
            "HF_HUB_DISABLE_TELEMETRY": True,
        }
        for name, value in patches.items():
            if hasattr(constants, name):
                monkeypatch.setattr(constants, name, value)
        monkeypatch.setattr(hf_api.api, "endpoint", self.endpoint)
        transformers_hub = sys.modules.get("transformers.utils.hub")
        if transformers_hub is not None and hasattr(transformers_hub, "_hf_api"):
            monkeypatch.setattr(transformers_hub, "_hf_api", None)  # rebuilt from the patched constants


@contextlib.contextmanager
def local_hub(
    root: str | os.PathLike,
    *,
    token: str = DEFAULT_TOKEN,
    user: str = DEFAULT_USER,
    startup_timeout: float = 60.0,
) -> Iterator[LocalHub]:
    """Start olah and the write endpoint under ``root`` (a fresh directory, e.g. pytest's tmp_path); stop both on
    exit."""
    root = Path(root).resolve() / "local_hub"
    root.mkdir(parents=True, exist_ok=False)
    mirrors = root / "mirrors"
    for repo_type in REPO_TYPES:
        (mirrors / repo_type).mkdir(parents=True)
    hf_home = root / "hf_home"
    hf_home.mkdir()

    server = _HubHTTPServer(GitStore(mirrors, user), token, user, root / "endpoint.log")
    olah_proc = None
    thread = None
    try:
        olah_proc, olah_port = _start_olah(root, mirrors, server.netloc, startup_timeout)
        server.olah_address = ("127.0.0.1", olah_port)
        server.olah_endpoint = f"http://127.0.0.1:{olah_port}"
        thread = threading.Thread(target=server.serve_forever, name="local-hub", kwargs={"poll_interval": 0.1})
        thread.daemon = True
        thread.start()
        env = {
            "HF_ENDPOINT": server.endpoint,
            "HF_TOKEN": token,
            "HF_HOME": str(hf_home),
            "HF_HUB_DISABLE_XET": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
        }
        yield LocalHub(
            root=root,
            endpoint=server.endpoint,
            token=token,
            user=user,
            olah_endpoint=server.olah_endpoint,
            mirrors_path=mirrors,
            hf_home=hf_home,
            env=env,
        )
    finally:
        if thread is not None:
            server.shutdown()
            thread.join(timeout=10)
        server.server_close()
        if olah_proc is not None:
            _stop_process(olah_proc)


def allow_loopback_only(monkeypatch) -> None:
    """Let this process's huggingface_hub (and transformers) reach a local hub whatever the environment says:
    OFFLINE_ENV removed and huggingface_hub.constants.HF_HUB_OFFLINE, read from it at import, set to False; and let
    no socket connect to anything but a loopback address, so that nothing else is reached. Undone by monkeypatch."""
    import ipaddress

    from huggingface_hub import constants

    for key in OFFLINE_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    connect = socket.socket.connect

    def loopback_connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] != "localhost":
            try:
                loopback = ipaddress.ip_address(address[0].split("%")[0]).is_loopback
            except ValueError:  # a host name: the tests use addresses
                loopback = False
            if not loopback:
                raise ConnectionRefusedError(f"the local-Hub tests connect to loopback addresses only, not {address}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_connect)


def main(argv: list[str] | None = None) -> None:  # pragma: no cover - manual use
    import argparse

    parser = argparse.ArgumentParser(description="Run the local test hub until Ctrl-C.")
    parser.add_argument("root", help="an empty directory to keep the repositories in")
    parser.add_argument("--token", default=DEFAULT_TOKEN)
    args = parser.parse_args(argv)
    with local_hub(args.root, token=args.token) as running:
        for key, value in running.env.items():
            print(f"export {key}={value}")
        print(f"# repositories: {running.mirrors_path}; Ctrl-C stops", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":  # pragma: no cover
    main()
