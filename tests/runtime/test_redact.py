"""Known secrets masked in every log record, whichever logger wrote it and however."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from runtime.kafka import KafkaSettings
from runtime.redact import install_redaction, redact, secrets_of
from runtime.settings import Settings, group, redis_url_setting, setting
from tests.conftest import REPO_ROOT

PASSWORD = "kafka-s3cret"
REDIS_PASSWORD = "redis-pw!"


@dataclass(frozen=True)
class Role(Settings):
    redis_url: str = redis_url_setting()
    token: str = setting("", env="STREAMREC_TEST_TOKEN", help="t", secret=True)
    name: str = setting("role", env="STREAMREC_TEST_NAME", help="n")
    kafka: KafkaSettings = group(KafkaSettings)


SETTINGS = Role(
    redis_url=f"redis://u:{REDIS_PASSWORD}@h:6379/0",
    token="tok-12345",
    kafka=KafkaSettings("k:1", {"sasl.password": PASSWORD, "client.id": "worker"}),
)


@pytest.fixture
def log() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root = logging.getLogger("redact-test-root")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield root, out
    root.removeHandler(handler)


def test_settings_give_up_every_secret_and_nothing_else() -> None:
    assert secrets_of(SETTINGS) == {PASSWORD, REDIS_PASSWORD, "tok-12345"}


def test_messages_arguments_and_tracebacks_are_redacted(
    log: tuple[logging.Logger, io.StringIO],
) -> None:
    root, out = log
    install_redaction(SETTINGS, logger=root)
    child = root.getChild("library")  # a library's logger, propagating to the root's handler
    child.info("connecting with %s", {"sasl.password": PASSWORD})
    child.warning(f"redis://u:{REDIS_PASSWORD}@h failed")
    try:
        raise RuntimeError(f"auth failed for token tok-12345 and {PASSWORD}")
    except RuntimeError:
        child.exception("client error")
    child.info("stack", stack_info=True)
    text = out.getvalue()
    for secret in (PASSWORD, REDIS_PASSWORD, "tok-12345"):
        assert secret not in text
    assert "***" in text and "client error" in text and "RuntimeError" in text


def test_longer_secrets_are_masked_first_and_short_ones_ignored() -> None:
    assert redact("a abcd abcdef", ["abcd", "abcdef"]) == "a *** ***"
    root = logging.getLogger("redact-test-short")
    assert install_redaction(Role(token="ab"), logger=root).secrets == ()


def test_an_uncaught_exception_is_printed_with_its_secret_masked() -> None:
    program = (
        "import logging, threading\n"
        "from runtime.kafka import KafkaSettings\n"
        "from runtime.redact import install_redaction\n"
        "logging.basicConfig()\n"
        "install_redaction(KafkaSettings(extra={'sasl.password': 'hunter2-secret'}))\n"
        "def fail():\n"
        "    raise RuntimeError('thread saw hunter2-secret')\n"
        "t = threading.Thread(target=fail)\n"
        "t.start(); t.join()\n"
        "raise ValueError('connect failed for sasl.password=hunter2-secret')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO_ROOT
    )
    assert done.returncode == 1
    assert "hunter2-secret" not in done.stderr
    assert "sasl.password=***" in done.stderr and "thread saw ***" in done.stderr
