"""Secrets: where they come from, and the one redaction every recorded or shown command, URL and
environment value goes through.

Where a secret comes from: the InfluxDB token only from the environment
(``OFBENCH_INFLUX_TOKEN``) or a file (``--influx-token-file``), never from the command line: argv
is readable by every user of the box (``/proc/<pid>/cmdline``), is kept by shells and CI logs,
and used to end in session.json (``influx_token``).

What is redacted (``***``), wherever a command, a URL or an environment value is written into a
record, session.json, a log line or an HTML page (``redact_text``, ``redact_argv``,
``redact_env``):
  * the value of every ``--influx-*`` option and of every option whose name looks secret
    (``--token``, ``--password``, ``--api-key``...);
  * ``NAME=value`` where NAME looks secret (TOKEN, PASS, SECRET, KEY, CREDENTIAL, AUTH);
  * the credentials of a URL (``http://user:pass@host/`` -> ``http://***@host/``);
  * the value of every environment variable whose name looks secret, and every secret read
    from a file (``register_secret``), wherever it occurs.
An environment variable whose name looks secret is never recorded (``secret_name``).

Pure, imports nothing of ofbench: every layer (drivers' logs, reports' pages, the harness's
records) uses this one module. A bottom package beside paths/ and openflow/ since issue 43 (it
was harness/redact.py, which the drivers and reports below the harness had to reach up to).
Its own tests are in redact/tests; that the harness, the supervisor's logs and the reports'
pages go through it is tested in harness/tests/test_redact.py.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Mapping

MASK = "***"
SECRET_WORDS = ("TOKEN", "PASS", "SECRET", "KEY", "CREDENTIAL", "AUTH")
_SECRET_NAME = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)
# scheme://userinfo@ : everything between "//" and the last "@" before the host part
_URL_CREDS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<creds>[^/@\s'\"<>]+)@")
# --influx-url=x, --influx-token x, --api-key=x, --password x (an option and its value)
_OPT_NAME = r"--(?:influx-[\w-]*|[\w-]*(?:token|pass|secret|key|credential|auth)[\w-]*)"
_OPT_VALUE = re.compile(rf"(?P<opt>{_OPT_NAME})(?P<sep>=|\s+)(?P<value>'[^']*'|\"[^\"]*\"|\S+)",
                        re.IGNORECASE)
# NAME=value with a secret-looking NAME (an environment assignment in a command or a log)
_ASSIGN = re.compile(r"(?P<name>\b[A-Za-z_][A-Za-z0-9_]*)=(?P<value>'[^']*'|\"[^\"]*\"|\S+)")
# a secret shorter than this is not searched for in free text ("-" means no token)
MIN_SECRET_LEN = 4

_registered: set[str] = set()


def secret_name(name: str) -> bool:
    """True when a variable or option named ``name`` may hold a secret (pure)."""
    return bool(_SECRET_NAME.search(name))


def register_secret(value: str | None) -> None:
    """Remember a secret read from a file, so it is masked wherever it appears later."""
    if value and len(value) >= MIN_SECRET_LEN:
        _registered.add(value)


def known_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """The secret values to mask in free text: registered ones and the environment's
    secret-named variables (their values, when long enough to be told apart)."""
    env = os.environ if environ is None else environ
    found = {v for k, v in env.items() if secret_name(k) and v and len(v) >= MIN_SECRET_LEN}
    return found | _registered


def redact_url(url: str) -> str:
    """``http://user:pass@host:8086/x`` -> ``http://***@host:8086/x``; anything else as is."""
    return _URL_CREDS.sub(lambda m: f"{m['scheme']}{MASK}@", url)


def redact_text(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` (a command line, a log line, an error) with every secret replaced by ``***``:
    --influx-* and secret-looking option values, secret-looking NAME=value assignments, URL
    credentials, and every known secret value wherever it occurs."""
    if not text:
        return text
    out = _OPT_VALUE.sub(lambda m: f"{m['opt']}{m['sep']}{MASK}", str(text))
    out = _ASSIGN.sub(lambda m: f"{m['name']}={MASK}" if secret_name(m["name"]) else m[0], out)
    out = redact_url(out)
    for secret in sorted(known_secrets(environ), key=len, reverse=True):
        out = out.replace(secret, MASK)
    return out


def redact_argv(argv: Iterable[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """Each argument redacted; the value after a bare ``--influx-token`` (or any option whose
    name looks secret) too."""
    out: list[str] = []
    mask_next = False
    for arg in map(str, argv):
        if mask_next and not arg.startswith("--"):
            out.append(MASK)
            mask_next = False
            continue
        mask_next = False
        if re.fullmatch(_OPT_NAME, arg, re.IGNORECASE):
            mask_next = True
            out.append(arg)
            continue
        out.append(redact_text(arg, environ))
    return out


def redact_command(argv: Iterable[str], environ: Mapping[str, str] | None = None) -> str:
    """A command line to record or show: ``" ".join`` of the redacted argv."""
    return " ".join(redact_argv(argv, environ))


def redact_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to record: secret-named ones dropped, the rest with URL credentials and
    known secrets masked (pure but for ``register_secret``'s set)."""
    return {k: redact_text(str(v), environ) for k, v in environ.items() if not secret_name(k)}


class SecretError(ValueError):
    """A secret given where it must not be, or a secret file that cannot be read."""


def read_secret_file(path: str | Path, what: str = "--influx-token-file") -> str:
    """The secret in ``path`` (its first line, whitespace stripped); registered for masking."""
    p = Path(path).expanduser()
    try:
        text = p.read_text()
    except OSError as e:
        raise SecretError(f"{what}: cannot read {p}: {e.strerror or e}") from None
    lines = text.strip().splitlines()
    value = lines[0].strip() if lines else ""
    if not value:
        raise SecretError(f"{what}: {p} is empty")
    register_secret(value)
    return value


def influx_token(token_file: str | None = None, cli_token: str | None = None,
                 environ: Mapping[str, str] | None = None, option: str = "--influx-token",
                 file_option: str = "--influx-token-file") -> str:
    """The InfluxDB token: ``--influx-token-file``, else ``OFBENCH_INFLUX_TOKEN``, else ``-``
    (none; InfluxDB 1.8 without auth). A token given on the command line (``cli_token`` other
    than ``-``) is refused: it would be in /proc/<pid>/cmdline for the whole run and in the
    shell's history, which no redaction afterwards can undo."""
    env = os.environ if environ is None else environ
    if cli_token not in (None, "", "-"):
        raise SecretError(
            f"{option}: a token on the command line is visible to every user of this box "
            f"(/proc/<pid>/cmdline) and kept in shell history and CI logs; put it in the "
            f"environment (OFBENCH_INFLUX_TOKEN) or in a file ({file_option} PATH)")
    if token_file:
        return read_secret_file(token_file, file_option)
    value = env.get("OFBENCH_INFLUX_TOKEN", "").strip()
    if value:
        register_secret(value)
        return value
    return "-"


def check_url_has_no_credentials(url: str | None, option: str = "--influx-url") -> None:
    """A URL on the command line must not carry ``user:pass@``: SecretError naming the option."""
    if url and _URL_CREDS.search(url):
        raise SecretError(
            f"{option}: {redact_url(url)}: the URL carries credentials, which on the command "
            f"line are visible to every user of this box and end in logs; give the URL "
            f"without them and the credentials in OFBENCH_INFLUX_TOKEN (InfluxDB 1.8: "
            f"'user:pass') or a token file")


def redact_mapping(values: Mapping, environ: Mapping[str, str] | None = None) -> dict:
    """A copy of ``values`` (e.g. a record's provenance) to show: the string value of a key
    whose name looks secret becomes ``***``, other strings are redacted (``redact_text``)."""
    out = {}
    for k, v in values.items():
        if isinstance(v, str):
            v = MASK if secret_name(str(k)) else redact_text(v, environ)
        out[k] = v
    return out


def redact_record(rec: Mapping) -> dict:
    """A result record to show: its provenance redacted (records written before the redaction
    existed may hold ``env_ofbench_influx_url`` with credentials)."""
    out = dict(rec)
    if isinstance(out.get("provenance"), Mapping):
        out["provenance"] = redact_mapping(out["provenance"])
    return out
