"""``streamrec-features-submit [job flags]``: run the feature job on a Flink cluster.

Packs ``jobs`` and ``schemas`` for the cluster's Python, resolves the connector
and function jars, submits ``streamrec-features`` (``-pym jobs.features``) with
``flink run -d`` and prints the job id. The JobManager is
``$STREAMREC_FLINK_JOBMANAGER`` (``host:port`` of its REST endpoint, where ``make
up`` starts the local one); ``$FLINK_CONF_DIR`` is passed to the client as usual.
Any flag of ``streamrec-features`` passes through.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from jobs.features.flink_client import submit_python_job, zip_packages
from jobs.features.functions_jar import functions_jar
from jobs.features.maven import kafka_connector_jar
from runtime.settings import CACHE_DIR_ENV, DEFAULT_CACHE_DIR, ENV_PREFIX, Settings, setting

PROJECT_ROOT = Path(__file__).resolve().parents[2]
JOBMANAGER_ENV = ENV_PREFIX + "FLINK_JOBMANAGER"
DEFAULT_JOBMANAGER = "127.0.0.1:8081"


@dataclass(frozen=True)
class SubmitSettings(Settings):
    """Where the cluster is and where the jars are built; the job's own flags pass through."""

    jobmanager: str = setting(
        DEFAULT_JOBMANAGER, env=JOBMANAGER_ENV, help="host:port of the JobManager's REST API"
    )
    cache_dir: Path = setting(
        DEFAULT_CACHE_DIR, env=CACHE_DIR_ENV, help="where the jars and the job archive are built"
    )


def build_parser() -> argparse.ArgumentParser:
    # No -h of its own (and no abbreviations): every other flag belongs to the job.
    parser = argparse.ArgumentParser(
        prog="streamrec-features-submit",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
        allow_abbrev=False,
    )
    SubmitSettings.add_flags(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, job_args = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if {"-h", "--help"} & set(job_args):
        from jobs.features.cli import build_parser as job_parser

        print(parser.format_help())
        print("the job's flags:\n")
        print(job_parser().format_help())
        return 0
    settings = SubmitSettings.load(None, args)
    cache = settings.cache_dir
    archive = zip_packages(
        PROJECT_ROOT, ["jobs", "schemas", "runtime"], cache / "flink-client" / "jobs.zip"
    )
    jars = [kafka_connector_jar(cache), functions_jar(cache)]
    job_args += ["--detach", *(flag for jar in jars for flag in ("--jar", str(jar)))]
    job_id = submit_python_job(settings.jobmanager, "jobs.features", job_args, [archive])
    print(job_id)
    print(f"submitted; watch it at http://{settings.jobmanager}/#/job/running", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
