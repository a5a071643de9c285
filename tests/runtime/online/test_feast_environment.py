import os
import subprocess
import sys

from runtime.online.feast_environment import set_by_feast, without_feast_metrics


def test_feasts_own_directory_is_dropped_and_everything_else_kept() -> None:
    env = {
        "PROMETHEUS_MULTIPROCESS_DIR": "/tmp/feast_metrics_8yad3qpm",
        "PROMETHEUS_MULTIPROC_DIR": "/tmp/feast_metrics_8yad3qpm/",
        "PATH": "/usr/bin",
    }
    assert without_feast_metrics(env) == {"PATH": "/usr/bin"}


def test_a_directory_the_user_set_is_kept() -> None:
    env = {"PROMETHEUS_MULTIPROC_DIR": "/var/run/metrics", "OTHER": "feast_metrics_x"}
    assert without_feast_metrics(env) == env
    assert not set_by_feast("OTHER", "/tmp/feast_metrics_x")


def test_what_importing_feast_really_sets_is_recognised() -> None:
    # Feast's import is what leaks the variables: the check must match what it sets.
    script = "import os, feast; print(os.environ['PROMETHEUS_MULTIPROC_DIR'])"
    env = without_feast_metrics(os.environ)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.pop("PROMETHEUS_MULTIPROCESS_DIR", None)
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert set_by_feast("PROMETHEUS_MULTIPROC_DIR", out.stdout.strip())
