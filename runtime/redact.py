"""Secrets out of every log line: a filter on the root handlers that masks known values.

``describe()`` masks the settings a role logs on purpose, but a secret can reach a
log by other roads: a client library's error quoting its configuration, an
exception message carrying a connection URL, a traceback. Each role therefore
installs :func:`install_redaction` with its settings right after
``logging.basicConfig``; every record any handler of the root logger formats then
has each secret value of those settings (see :meth:`Settings.secrets`) replaced by
``***`` in its message, its exception text and its stack text.
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
from collections.abc import Iterable
from types import TracebackType

from runtime.settings import MASK, Settings

# Shorter values are not searched for: masking every "ab" in every line would ruin
# the logs and hide nothing a guess would not find.
MIN_SECRET_CHARS = 4


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``***`` (longest first, so a secret
    containing another is masked whole)."""
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


class RedactingFilter(logging.Filter):
    """Rewrites a record's message, exception and stack text with the secrets masked."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = tuple(
            sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        )

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        # Formatted here once, so a secret in the arguments is caught whatever their type.
        record.msg, record.args = redact(record.getMessage(), self.secrets), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            # Formatter.format uses exc_text when it is set: the traceback is not redone.
            record.exc_text = redact(record.exc_text, self.secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, self.secrets)
        return True


def secrets_of(*settings: Settings) -> set[str]:
    """Every secret value held by ``settings``."""
    return set().union(*(each.secrets() for each in settings))


def install_redaction(*settings: Settings, logger: logging.Logger | None = None) -> RedactingFilter:
    """Mask the secrets of ``settings`` in whatever the handlers of ``logger`` (root) write.

    On the handlers, not the logger: a logger's filters see only its own records,
    while every record propagated from a library's logger passes the root's handlers.
    """
    redacting = RedactingFilter(secrets_of(*settings))
    for handler in (logger or logging.getLogger()).handlers:
        handler.addFilter(redacting)
    install_excepthooks(redacting.secrets)
    return redacting


def install_excepthooks(secrets: Iterable[str]) -> None:
    """Uncaught exceptions (main thread and others) printed with the secrets masked.

    Python prints them itself, past every logging handler: an exception whose message
    quotes a connection URL would otherwise end the process by printing its password.
    """
    masked = tuple(secrets)

    def print_masked(
        kind: type[BaseException], value: BaseException, trace: TracebackType | None
    ) -> None:
        text = "".join(traceback.format_exception(kind, value, trace))
        sys.stderr.write(redact(text, masked))

    def print_thread_masked(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            sys.stderr.write(f"Exception in thread {getattr(args.thread, 'name', '?')}:\n")
            print_masked(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = print_masked
    threading.excepthook = print_thread_masked
