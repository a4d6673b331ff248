"""The server behind a reverse proxy: whose forwarded headers it believes (`--forwarded_allow_ips`) and under which
path the proxy publishes it (`--url_prefix`).

uvicorn believes `X-Forwarded-For` and `X-Forwarded-Proto` from its trusted addresses (127.0.0.1 and ::1 unless told
otherwise) and never reads `X-Forwarded-Host`, so a link the server builds from the request (`/translate_file`'s
download link) kept the internal host behind any proxy. `Forwarded` does all three for the addresses trusted: the
client address and scheme as uvicorn would, and the forwarded host as the request's `Host`. With `--url_prefix
/mt` (uvicorn's root path) the proxy publishes the server under /mt and strips the prefix from what it passes on
(nginx: `location /mt/ { proxy_pass http://127.0.0.1:5000/; }`): the links the server writes, the page's calls
(relative) and `/spec`'s server name /mt. The serve command gives uvicorn both settings in each place it starts
it (one process, or `--workers N`).
"""

import argparse

from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware


TRUSTED = "127.0.0.1,::1"  # uvicorn's own default: a proxy on this machine


class Forwarded:
    """ASGI middleware: uvicorn's ProxyHeadersMiddleware, and `X-Forwarded-Host` (its first value) as the `Host` of
    a request from a trusted address."""

    def __init__(self, app, trusted: str = TRUSTED):
        self.app = ProxyHeadersMiddleware(app, [host.strip() for host in trusted.split(",") if host.strip()])

    async def __call__(self, scope, receive, send):
        client = scope.get("client")
        if scope["type"] == "http" and client and client[0] in self.app.trusted_hosts:
            forwarded = [value for name, value in scope["headers"] if name == b"x-forwarded-host"]
            if forwarded and forwarded[0].split(b",")[0].strip():
                host = forwarded[0].split(b",")[0].strip()
                headers = [(name, value) for name, value in scope["headers"] if name != b"host"]
                scope["headers"] = [*headers, (b"host", host)]  # in place: uvicorn's access log reads this scope
        await self.app(scope, receive, send)


def add_proxy_arguments(parser: argparse.ArgumentParser) -> None:
    add_log_argument(parser)
    parser.add_argument(
        "--forwarded_allow_ips",
        default=TRUSTED,
        metavar="ADDRESSES",
        help="Addresses (comma-separated; networks such as 10.0.0.0/8; * for any) whose X-Forwarded-For, "
        "-Proto and -Host headers are believed: the reverse proxy's (default: this machine's).",
    )
    parser.add_argument(
        "--url_prefix",
        default="",
        metavar="PATH",
        help="The path the reverse proxy publishes the server under, e.g. /mt, which the proxy strips: the "
        "download links, the page's calls and /spec name it (default: none).",
    )


def add_log_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--access_log",
        action="store_true",
        help="Log each request (uvicorn's access log: the client's address, forwarded by a trusted proxy, the "
        "method, path and status) besides warnings (default: warnings only).",
    )


def check_proxy_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.url_prefix and (not args.url_prefix.startswith("/") or args.url_prefix.endswith("/")):
        parser.error(
            f"--url_prefix is a path such as /mt (beginning with /, not ending with one), got {args.url_prefix!r}"
        )


def uvicorn_settings(args: argparse.Namespace) -> dict:
    """What uvicorn.run takes from the proxy and log flags (the forwarded headers are read by `Forwarded`, not by
    uvicorn)."""
    return {
        "proxy_headers": False,
        "root_path": args.url_prefix,
        "log_level": "info" if args.access_log else "warning",
        "access_log": args.access_log,
    }


__all__ = ["Forwarded", "TRUSTED", "add_log_argument", "add_proxy_arguments", "check_proxy_args", "uvicorn_settings"]
