"""The feature job's Java parser and the Python codec give the same verdict on poison.

Producers are told what the codec accepts (schemas/); the Flink job parses with
its own Java code (udf/BehaviorEventParser). Any input on which they differ is
an event that one side dead-letters and the other counts. ``make fuzz``'s 10,000 poisoned
events (tests/support/poison.py) go through both: same error kind, or the same
fields.
"""

from __future__ import annotations

import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyflink
import pytest
from hypothesis import given

from jobs.features.functions_jar import functions_jar
from runtime.settings import cache_dir
from schemas.codec import event_codec
from schemas.errors import InvalidRecord
from tests.schemas.test_codec_fuzz import FUZZ
from tests.support.poison import NOW_MS, SKEW_MS, poisoned_events

HARNESS = Path(__file__).parent / "java" / "ParserVerdicts.java"
CODEC = event_codec(clock=lambda: NOW_MS, max_future_skew_ms=SKEW_MS)


class JavaParser:
    """``ParserVerdicts`` (the job's parser behind stdin/stdout), one JVM for all inputs."""

    def __init__(self, build_dir: Path) -> None:
        flink_dist = next((Path(pyflink.__file__).parent / "lib").glob("flink-dist-*.jar"))
        classpath = f"{build_dir}:{functions_jar(cache_dir())}:{flink_dist}"
        subprocess.run(
            ["javac", "-cp", classpath, "-d", str(build_dir), str(HARNESS)],
            check=True, capture_output=True,
        )  # fmt: skip
        limits = [str(CODEC.max_bytes), str(SKEW_MS), str(NOW_MS)]
        self.process = subprocess.Popen(
            ["java", "-cp", classpath, "io.streamrec.flink.ParserVerdicts", *limits],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip

    def verdict(self, raw: bytes) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(struct.pack(">i", len(raw)) + raw)
        self.process.stdin.flush()
        return self.process.stdout.readline().decode().strip()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaParser]:
    parser = JavaParser(tmp_path_factory.mktemp("parser-verdicts"))
    yield parser
    parser.close()


def python_verdict(raw: bytes) -> str:
    try:
        e = CODEC.decode(raw)
    except InvalidRecord as exc:
        return exc.kind
    return f"ok {e.user_id} {e.item_id} {e.category_id} {e.behavior} {e.ts}"


def test_a_valid_event_reads_the_same_in_both(java: JavaParser) -> None:
    raw = b'{"user_id":1,"item_id":2,"category_id":3,"behavior":"pv","ts":1700000000000}'
    assert java.verdict(raw) == python_verdict(raw) == "ok 1 2 3 pv 1700000000000"


@FUZZ
@given(raw=poisoned_events())
def test_both_parsers_give_every_poisoned_event_the_same_verdict(
    java: JavaParser, raw: bytes
) -> None:
    assert java.verdict(raw) == python_verdict(raw), raw[:300]
