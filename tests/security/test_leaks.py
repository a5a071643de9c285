"""Finding secrets in what a run wrote, in the forms a log could carry them."""

from __future__ import annotations

import base64
from pathlib import Path

from tests.security.leaks import scan_bytes, scan_tree

SECRET = "p@ss,w/rd'1"


def test_a_secret_is_found_plain_url_quoted_and_base64_encoded() -> None:
    assert scan_bytes(b"password=p@ss,w/rd'1", [SECRET], "a")
    assert scan_bytes(b"rediss://u:p%40ss%2Cw%2Frd%271@h", [SECRET], "b")
    assert scan_bytes(base64.b64encode(SECRET.encode()), [SECRET], "c")
    assert not scan_bytes(b"password=***", [SECRET], "d")


def test_a_leak_names_the_file_and_which_secret_never_the_secret(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "worker.log").write_text(f"connecting with {SECRET}\n")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "credentials.json").write_text(SECRET)
    read, leaks = scan_tree(tmp_path, ["other", SECRET], exempt=[tmp_path / "secrets"])
    assert read == 1
    assert [(leak.where, leak.secret_index) for leak in leaks] == [
        (str(tmp_path / "logs" / "worker.log"), 1)
    ]
    assert SECRET not in repr(leaks)
