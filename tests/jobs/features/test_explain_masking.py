"""``--explain`` prints the job's SQL with every Kafka secret masked."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.features.cli import main

PASSWORD = "kafka-pw-9f3"
JAAS_SECRET = "java-only-7c1"


def test_explain_masks_derived_and_java_only_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(
        "STREAMREC_KAFKA_CONFIG",
        f"security.protocol=SASL_SSL,sasl.mechanism=PLAIN,sasl.username=u,sasl.password={PASSWORD}",
    )
    monkeypatch.setenv("STREAMREC_KAFKA_JAVA_CONFIG", f"ssl.truststore.password={JAAS_SECRET}")
    assert main(["--explain", "--jar", str(tmp_path / "x.jar")]) == 0
    sql = capsys.readouterr().out
    assert PASSWORD not in sql and JAAS_SECRET not in sql
    assert 'password="***";' in sql  # the JAAS config is built from the masked password
    assert "'properties.ssl.truststore.password' = '***'" in sql
    assert "'properties.security.protocol' = 'SASL_SSL'" in sql
