"""NVIDIA Triton's `tritonserver` binary, run directly on a plain model repository.

The binary and its python backend ship inside the `nvidia-pytriton` wheel. The
wheel is fetched with `pip download --no-deps` into the cache and only its server
parts are unpacked; it is never installed, since it pins numpy<2 and the project
runs numpy 2 (the served model keeps its tensors on DLPack for that reason, see
inference/model_repository/ranker_python/model.py). PyTriton's Python API is not
used: the binary run directly serves about 3x faster.

The python backend's stub is a separate program per Python version. It embeds
libpython and finds its environment through `python3` on PATH (PYTHONPATH is
ignored), so the stub of the running interpreter's version is copied into the
backend folder and the running interpreter's bin/ and LIBDIR go first on PATH and
LD_LIBRARY_PATH.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Mapping
from pathlib import Path

from jobs.localstack.errors import StackError
from jobs.localstack.service import Service
from jobs.localstack.settings import HOST, StackSettings
from schemas.files import file_lock

log = logging.getLogger(__name__)

PYTRITON_VERSION = "0.7.0"
WHEEL_PREFIX = "pytriton/tritonserver/"
LIBS_PREFIX = "nvidia_pytriton.libs/"
# Within pytriton/tritonserver/: the parts a server needs (no Python client code).
SERVER_PARTS = ("bin/", "backends/", "caches/", "python_backend_stubs/")
_COMPLETE = ".complete"


def python_tag() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def server_home(cache_dir: Path) -> Path:
    """Where the wheel's server parts are unpacked: `<cache>/tritonserver-pytriton-<v>`."""
    return cache_dir / f"tritonserver-pytriton-{PYTRITON_VERSION}"


def backend_dir(home: Path, tag: str | None = None) -> Path:
    """A backend folder per Python version: each holds the matching stub."""
    return home / f"backends-py{tag or python_tag()}"


def wanted(member: str) -> bool:
    """True for wheel members the server needs (pure: unit tested on names)."""
    if member.startswith(LIBS_PREFIX):
        return True
    if not member.startswith(WHEEL_PREFIX):
        return False
    return member[len(WHEEL_PREFIX) :].startswith(SERVER_PARTS)


def ensure_server(cache_dir: Path, tag: str | None = None) -> Path:
    """The unpacked server (`bin/tritonserver`, `lib/`, backends), fetching it once.

    Tests and the CLI may ask at the same moment; one fetches, the others wait.
    """
    home = server_home(cache_dir)
    backends = backend_dir(home, tag)
    if (home / _COMPLETE).exists() and (backends / _COMPLETE).exists():
        return home
    cache_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(cache_dir / ".tritonserver.lock"):
        if not (home / _COMPLETE).exists():
            _unpack(_download_wheel(cache_dir), home)
        if not (backends / _COMPLETE).exists():
            _make_backend_dir(home, backends, tag or python_tag())
    return home


def _download_wheel(cache_dir: Path) -> Path:
    wheels = cache_dir / "wheels"
    found = sorted(wheels.glob(f"nvidia_pytriton-{PYTRITON_VERSION}-*.whl"))
    if found:
        return found[0]
    log.info("fetching the nvidia-pytriton %s wheel into %s", PYTRITON_VERSION, wheels)
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    argv += ["-d", str(wheels), f"nvidia-pytriton=={PYTRITON_VERSION}"]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    found = sorted(wheels.glob(f"nvidia_pytriton-{PYTRITON_VERSION}-*.whl"))
    if result.returncode != 0 or not found:
        output = (result.stdout + result.stderr)[-3000:]
        raise StackError(
            f"downloading nvidia-pytriton=={PYTRITON_VERSION} with pip failed "
            f"(exit {result.returncode}); it carries the tritonserver binary "
            f"(Linux x86_64 only):\n{output}"
        )
    return found[0]


def _unpack(wheel: Path, home: Path) -> None:
    log.info("unpacking tritonserver from %s into %s", wheel.name, home)
    shutil.rmtree(home, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=home.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if info.is_dir() or not wanted(info.filename):
                    continue
                name = info.filename
                relative = "lib/" + name[len(LIBS_PREFIX) :]
                if name.startswith(WHEEL_PREFIX):
                    relative = name[len(WHEEL_PREFIX) :]
                target = staging / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, target.open("wb") as sink:
                    shutil.copyfileobj(source, sink)
                # Wheels keep Unix permissions in the upper bits of external_attr.
                mode = (info.external_attr >> 16) & 0o777
                target.chmod(mode | 0o644 if mode else 0o755)
        (staging / _COMPLETE).write_text(f"nvidia-pytriton {PYTRITON_VERSION}\n")
        staging.rename(home)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _make_backend_dir(home: Path, backends: Path, tag: str) -> None:
    stub = home / "python_backend_stubs" / tag / "triton_python_backend_stub"
    if not stub.exists():
        shipped = sorted(p.name for p in (home / "python_backend_stubs").iterdir())
        raise StackError(
            f"nvidia-pytriton {PYTRITON_VERSION} has no python backend stub for Python {tag} "
            f"(it ships {', '.join(shipped)}); run the stack with one of those."
        )
    shutil.rmtree(backends, ignore_errors=True)
    shutil.copytree(home / "backends", backends)
    shutil.copy2(stub, backends / "python" / "triton_python_backend_stub")
    (backends / _COMPLETE).write_text(f"python {tag}\n")


def server_env(
    home: Path, environ: Mapping[str, str] | None = None, python: str = sys.executable
) -> dict[str, str]:
    """Our environment with the wheel's libraries, libpython's folder and python3's bin first."""
    env = dict(os.environ if environ is None else environ)
    # Without LIBDIR first the stub may load an older system libpython of the same
    # soname and fail to start (seen with pyenv interpreters on Debian).
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    libs = [str(home / "lib"), libdir, env.get("LD_LIBRARY_PATH", "")]
    env["LD_LIBRARY_PATH"] = os.pathsep.join(part for part in libs if part)
    # Not resolved: a virtual environment's bin/python is a symlink to the base
    # interpreter, and resolving it would lose the environment's site-packages.
    paths = [str(Path(python).parent), env.get("PATH", "")]
    env["PATH"] = os.pathsep.join(part for part in paths if part)
    return env


def published_models(repository: Path, names: tuple[str, ...]) -> list[str]:
    """The names among `names` that have at least one numbered version in `repository`."""
    return [
        name
        for name in names
        if (repository / name / "config.pbtxt").exists()
        and any(p.is_dir() and p.name.isdigit() for p in (repository / name).iterdir())
    ]


class TritonService(Service):
    """`tritonserver` in explicit model-control mode on the stack's model repository.

    Only models that are published (have a numbered version) are loaded at start;
    the server starts and reports ready without any, so `up` works before the
    first `python -m inference.serving publish`, which can then load them.
    """

    name = "triton"
    # Triton waits for in-flight requests and unloads models before it exits.
    stop_timeout_s = 40.0

    def __init__(self, settings: StackSettings) -> None:
        super().__init__(settings)
        self.home = server_home(settings.cache_dir)
        self.repository = settings.model_repository

    @property
    def log_path(self) -> Path:
        return self.dir / "triton.log"

    def ports(self) -> tuple[int, ...]:
        s = self.settings
        return (s.triton_http_port, s.triton_grpc_port, s.triton_metrics_port)

    def endpoint(self) -> str:
        return f"grpc {self.settings.triton_grpc_url}, {self.settings.triton_http_url}"

    def exports(self) -> dict[str, str]:
        return {
            "STREAMREC_TRITON_URL": self.settings.triton_grpc_url,
            "STREAMREC_TRITON_HTTP_URL": self.settings.triton_http_url,
            "STREAMREC_TRITON_MODEL_REPOSITORY": str(self.repository),
        }

    def ensure_installed(self) -> None:
        ensure_server(self.settings.cache_dir)

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.repository.mkdir(parents=True, exist_ok=True)
        missing = set(self.settings.triton_models) - set(self._startup_models())
        if missing:
            log.warning(
                "triton: no published version of %s in %s; starting without it "
                "(publish with `python -m inference.serving publish`)",
                ", ".join(sorted(missing)),
                self.repository,
            )

    def _startup_models(self) -> list[str]:
        return published_models(self.repository, self.settings.triton_models)

    def command(self) -> list[str]:
        s = self.settings
        argv = [
            str(self.home / "bin" / "tritonserver"),
            f"--model-repository={self.repository}",
            f"--backend-directory={backend_dir(self.home)}",
            "--model-control-mode=explicit",
            f"--http-address={HOST}",
            f"--http-port={s.triton_http_port}",
            f"--grpc-address={HOST}",
            f"--grpc-port={s.triton_grpc_port}",
            f"--metrics-address={HOST}",
            f"--metrics-port={s.triton_metrics_port}",
            # Also the marker that tells our process apart (it names a file in self.dir).
            f"--log-file={self.log_path}",
            "--exit-timeout-secs=30",
        ]
        return argv + [f"--load-model={name}" for name in self._startup_models()]

    def env(self) -> Mapping[str, str]:
        return server_env(self.home)

    def is_healthy(self) -> bool:
        return http_ok(f"{self.settings.triton_http_url}/v2/health/ready")


def http_ok(url: str, timeout_s: float = 1.0) -> bool:
    """True if GET `url` answers 200; never raises."""
    # No proxy: an http_proxy in the environment must not swallow loopback calls.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout_s) as response:
            return bool(response.status == 200)
    except (OSError, ValueError, urllib.error.URLError):
        return False
