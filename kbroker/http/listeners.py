"""kbroker.http.listeners: `http://HOST:PORT` items (no aiohttp here: the CLI checks them before start)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from kbroker.config import ConfigError


def parse_http_listener(text: str) -> tuple[str, int]:
    """http://HOST:PORT (or HOST:PORT) -> (host, port); ConfigError naming the property otherwise."""
    item = text.strip()
    try:
        parts = urlsplit(item if "://" in item else f"http://{item}")
        port = parts.port
    except ValueError as error:
        raise ConfigError(f"kbroker.http.listeners: expected http://HOST:PORT, got {item!r} ({error})") from None
    if parts.scheme != "http" or port is None or parts.path not in ("", "/"):
        raise ConfigError(f"kbroker.http.listeners: expected http://HOST:PORT, got {item!r}")
    return parts.hostname or "0.0.0.0", port


def bind_http_listeners(listeners: tuple[str, ...]) -> list[socket.socket]:
    """Bind every HTTP listener now (before the data directory is touched: a port in use fails the start
    first); the gateway serves on these sockets once the broker is ready. OSError if one cannot bind."""
    bound: list[socket.socket] = []
    try:
        for item in listeners:
            host, port = parse_http_listener(item)
            bound.append(socket.create_server((host, port), reuse_port=False))
    except OSError:
        for sock in bound:
            sock.close()
        raise
    return bound
