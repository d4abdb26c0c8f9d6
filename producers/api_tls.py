"""The local API's TLS: HTTPS by default, as GPUd serves it, with a self-signed certificate of its own.

GPUd answers only HTTPS on 15132, and its clients (Flow's ``flow health``, GPUd's ``client/v1``) dial
``https://localhost:15132`` without verifying the certificate. The agent makes an EC P-256 certificate for
localhost at its first start with the ``openssl`` binary (no Python dependency: the agent stays small) and
keeps it in its state dir beside the token, the key mode 0600; a key others could read is replaced, as the
token is (``api_auth``). An operator's own certificate and key are used as given.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import ssl
import stat
import subprocess
import tempfile
from pathlib import Path

from gpuhealth.errors import ConfigError

log = logging.getLogger("gpuhealth.api")

CERT_FILE, KEY_FILE = "api-cert.pem", "api-key.pem"  # in the agent's state dir, beside api-token
_DAYS = 3650  # GPUd's own is as long-lived: nothing verifies it, a renewal would only break pinned clients


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server context for this certificate and key; ConfigError when they do not load (wrong, unreadable)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)  # TLS 1.2 at least, the library's ciphers
    ctx.num_tickets = 0  # resumption saves a loopback client nothing; tickets would be writes in the selector
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"the API's TLS certificate {cert} and key {key} do not load: {e}") from None
    return ctx


def own_context(state_dir: Path) -> ssl.SSLContext:
    """The context for the agent's own certificate, made when it is missing, not private, or broken."""
    cert, key = state_dir / CERT_FILE, state_dir / KEY_FILE
    if _private(key) and cert.is_file():
        try:
            return server_context(cert, key)
        except ConfigError as e:  # half-replaced or damaged: a new pair, as at the first start
            log.warning("replacing the API's certificate: %s", e)
    try:
        make_certificate(cert, key)
    except OSError as e:  # a data dir it cannot write (read-only, full): a certificate for this run alone
        log.error("the API's certificate cannot be kept in %s (%s): one for this run only", state_dir, e)
        with tempfile.TemporaryDirectory(prefix="gpuhealth-tls-") as tmp:  # 0700; the context keeps it in memory
            make_certificate(Path(tmp) / CERT_FILE, Path(tmp) / KEY_FILE)
            return server_context(Path(tmp) / CERT_FILE, Path(tmp) / KEY_FILE)
    return server_context(cert, key)


def _private(key: Path) -> bool:
    try:
        st = os.lstat(key)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def make_certificate(cert: Path, key: Path) -> None:
    """A self-signed certificate for localhost, 127.0.0.1 and ::1; the key private from its first byte."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise ConfigError("no openssl binary to make the API's certificate: give --api-tls-cert and --api-tls-key")
    key.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=key.parent, prefix=".tls-") as tmp:  # mode 0700: no one else sees the key
        new_cert, new_key = Path(tmp) / CERT_FILE, Path(tmp) / KEY_FILE
        argv = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", str(new_key), "-out", str(new_cert), "-days", str(_DAYS),
                "-subj", f"/O=gpuhealth/CN={socket.gethostname()[:64]}",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise ConfigError(f"openssl could not make the API's certificate: {done.stderr.strip()[-300:]}")
        new_key.chmod(0o600)
        os.replace(new_key, key)
        os.replace(new_cert, cert)
    log.info("made the local API's self-signed certificate: %s (key %s, mode 0600)", cert, key)
