"""One TLS context per process for the Messages API's connections.

Building a client's TLS context loads the system's CA bundle: 18–60 ms on these machines
(measured), which was most of what a kernel's first ``%%agent`` run waited for after the
warm-up, and which every new client (a new event loop, ``asyncio.run`` in a script) paid
again. The context is the HTTP library's own default (``httpx2.create_ssl_context()``,
the one a client would build for itself with ``verify=True``), built once, shared by every
client this process makes, and built early by the kernel's warm-up thread
(``jupyter/kernel/warmup.py``). An ``ssl.SSLContext`` may be shared between connections and
threads; nothing here changes it after it is built.

``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` are read when the context is built, as the library
reads them: a process that changes them later gets a context built for the new values.
One that names no readable bundle is a :class:`ModelError` (``kind="tls_config"``) that says
which variable to fix, not a bare ``FileNotFoundError``.
"""

from __future__ import annotations

import os
import ssl
import threading

from ..loop.model_protocol import ModelError

__all__ = ["shared_tls_context"]

_lock = threading.Lock()
_built: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


def shared_tls_context() -> ssl.SSLContext:
    """The process's TLS context for API clients (built on the first call, thread-safe)."""
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _built.get(key)
    if context is None:
        with _lock:  # the warm-up thread and a run may ask at once: build it once
            context = _built.get(key)
            if context is None:
                import httpx2

                try:
                    context = _built[key] = httpx2.create_ssl_context()
                except (OSError, ssl.SSLError) as exc:
                    raise ModelError(_unreadable(key, exc), kind="tls_config") from exc
    return context


def _unreadable(key: tuple[str | None, str | None], exc: Exception) -> str:
    cert_file, cert_dir = key
    named = (f"SSL_CERT_FILE ({cert_file})" if cert_file else f"SSL_CERT_DIR ({cert_dir})" if cert_dir
             else "the system's CA bundle")
    return (f"Could not load the CA certificates from {named}: {exc}. Point the variable at a PEM "
            "bundle (a file) or a folder of hashed certificates, or unset it to use the system's.")
