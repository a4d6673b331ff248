"""Where an index entry's files come from, fetched into a staging folder for the install to verify: a Hub repository
at a commit (`huggingface_hub`), a .tar.gz or .zip archive by URL (https, or plain http to a loopback host only),
or a folder of a repository checkout (`models/...`, copied). Only the files the entry names are written."""

import os
import shutil
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from huggingface_hub import HfApi, hf_hub_download

from ..hub import NetworkError
from .integrity import IntegrityError, check_name


KINDS = ("repository", "hub", "url")  # the sources an index entry may name, in the order an install prefers them
LOOPBACK = ("127.0.0.1", "::1", "localhost")  # the only hosts plain http may reach
ARCHIVE_SLACK = 1 << 20  # an archive may exceed its files' sizes by this (headers, a folder) before it is refused
_BLOCK = 1 << 20


def check_url(url: str) -> str:
    """`url` if it is https, or plain http to a loopback host; a ValueError naming it otherwise."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname in LOOPBACK:
        return url
    if parts.scheme == "http":
        raise ValueError(
            f"refused {url}: plain http is allowed only to a loopback host ({', '.join(LOOPBACK)}); use https"
        )
    raise ValueError(f"refused {url!r}: not an https URL")


def describe(source: dict) -> str:
    if source["kind"] == "hub":
        return f"the Hub repository {source['repo_id']} at {source['revision']}"
    return source["url"] if source["kind"] == "url" else f"{source['path']} of the repository checkout"


def repository_root(given: str | os.PathLike | None, path: str) -> Path | None:
    """The checkout that holds `path` (a repository source's folder): `given`, else the checkout this package runs
    from (an editable install), else the current directory; None when none holds it."""
    candidates = [Path(given)] if given else [Path(__file__).resolve().parents[2], Path.cwd()]
    for root in candidates:
        if (root / "pyproject.toml").is_file() and (root / path).is_dir():
            return root
    return None


def fetch(source: dict, staging: Path, repository: str | os.PathLike | None = None) -> None:
    """Write the files `source` names (its manifest, `source["files"]`) into `staging`, from where it says."""
    names = [check_name(name) for name in source["files"]]
    if source["kind"] == "hub":
        fetch_hub(source["repo_id"], source["revision"], names, staging)
    elif source["kind"] == "url":
        fetch_archive(source["url"], source["files"], staging)
    elif source["kind"] == "repository":
        root = repository_root(repository, source["path"])
        if root is None:
            raise FileNotFoundError(f"no repository checkout holds {source['path']} (give one with --repository)")
        for name in names:
            if (root / source["path"] / name).is_file():
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(root / source["path"] / name, staging / name)
    else:
        raise ValueError(f"unknown source kind {source['kind']!r}; the index knows {', '.join(KINDS)}")


def hub_api() -> HfApi:
    """HfApi at HF_ENDPOINT, which must be https or a loopback http (as a URL source)."""
    api = HfApi()
    check_url(api.endpoint)
    return api


def fetch_hub(repo_id: str, revision: str, names: list[str], staging: Path) -> None:
    """Download `names` of the Hub repository `repo_id` at `revision` into `staging`."""
    api = hub_api()
    try:
        for name in names:
            hf_hub_download(repo_id, name, revision=revision, local_dir=staging, endpoint=api.endpoint)
    except NetworkError as error:  # not an OSError in huggingface_hub's HTTP client
        raise ConnectionError(f"cannot reach the Hub at {api.endpoint}: {error}") from None
    shutil.rmtree(staging / ".cache", ignore_errors=True)  # huggingface_hub's bookkeeping of a local_dir


class _CheckedRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is followed only where a URL source itself may lead (https, or http to a loopback host)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        check_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def download(url: str, path: Path, limit: int) -> None:
    """Stream `url` into `path`, refusing more than `limit` bytes."""
    loopback = urllib.parse.urlsplit(url).hostname in LOOPBACK  # never through a proxy
    opener = urllib.request.build_opener(_CheckedRedirect, *([urllib.request.ProxyHandler({})] if loopback else []))
    request = urllib.request.Request(check_url(url), headers={"User-Agent": "transformer-mt-models"})
    written = 0
    try:
        with opener.open(request, timeout=60) as response, open(path, "wb") as out:
            for block in iter(lambda: response.read(_BLOCK), b""):
                written += len(block)
                if written > limit:
                    raise IntegrityError(f"{url} is larger than its files ({limit:,} bytes with headers); refused")
                out.write(block)
    except urllib.error.URLError as error:
        raise ConnectionError(f"cannot download {url}: {error.reason}") from None


def fetch_archive(url: str, files: dict[str, dict], staging: Path) -> None:
    """Download the .tar.gz or .zip at `url` and extract the files the manifest names (at the archive's top, or in
    one folder there), each cut off past its stated size; nothing else of the archive is written."""
    archive = staging / ".download"
    download(url, archive, sum(entry["size"] for entry in files.values()) + ARCHIVE_SLACK)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as opened:
                members = {info.filename: info for info in opened.infolist() if not info.is_dir()}
                _extract(members, files, staging, opened.open)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as opened:
                members = {member.name: member for member in opened.getmembers() if member.isfile()}
                _extract(members, files, staging, opened.extractfile)
        else:
            raise IntegrityError(f"{url} is neither a .tar.gz nor a .zip archive")
    finally:
        archive.unlink()


def _extract(members: dict, files: dict[str, dict], staging: Path, open_member) -> None:
    tops = {name.split("/", 1)[0] for name in members}
    prefix = f"{tops.pop()}/" if len(tops) == 1 and all("/" in name for name in members) else ""
    for name, expected in files.items():
        member = members.get(prefix + name)
        if member is None:
            continue  # the verification names what is missing
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        left = expected["size"] + 1  # one byte more shows a file longer than stated
        with open_member(member) as source, open(staging / name, "wb") as out:
            while left and (block := source.read(min(left, _BLOCK))):
                out.write(block)
                left -= len(block)
