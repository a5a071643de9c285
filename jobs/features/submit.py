"""``python -m jobs.features.submit [job flags]``: run the feature job on the stack's Flink cluster.

Packs ``jobs`` and ``schemas`` for the cluster's Python, resolves the connector
and function jars, submits ``python -m jobs.features`` with ``flink run -d``
and prints the job id (follow it on the web UI, ``$STREAMREC_FLINK_REST_URL``).
Any flag of ``python -m jobs.features`` passes through.
"""

from __future__ import annotations

import sys
from pathlib import Path

from jobs.features.functions_jar import functions_jar
from jobs.localstack.flink_connectors import kafka_connector_jar
from jobs.localstack.flink_jobs import submit_python_job, zip_packages
from jobs.localstack.settings import StackSettings

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    job_args = list(sys.argv[1:] if argv is None else argv)
    if {"-h", "--help"} & set(job_args):
        print(__doc__)
        return 0
    settings = StackSettings.from_env()
    archive = settings.home / "flink-client" / "streamrec-jobs.zip"
    zip_packages(PROJECT_ROOT, ["jobs", "schemas"], archive)
    jars = [kafka_connector_jar(settings), functions_jar(settings.cache_dir)]
    job_args += ["--detach", *(flag for jar in jars for flag in ("--jar", str(jar)))]
    job_id = submit_python_job(settings, "jobs.features", job_args, [archive])
    print(job_id)
    print(f"submitted; watch it at {settings.flink_rest_url}/#/job/running", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
