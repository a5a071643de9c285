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

import hashlib
import logging
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Mapping
from pathlib import Path

from inference.serving.settings import CONTROL_KEY_ENV, CONTROL_KEY_HEADER, TLS_CA_ENV
from jobs.localstack.credentials import ensure_credentials
from jobs.localstack.errors import StackError
from jobs.localstack.service import Service
from jobs.localstack.settings import HOST, StackSettings
from jobs.localstack.tls import TlsFiles, ensure_certificates
from runtime.files import file_lock

log = logging.getLogger(__name__)

PYTRITON_VERSION = "0.7.0"
# The wheel pip downloads is run as a server binary: pinned, so that a tampered or
# substituted file (a mirror, a poisoned cache) is refused before anything is unpacked.
# PyPI's digest of nvidia_pytriton-0.7.0-py3-none-manylinux_2_35_x86_64.whl.
WHEEL_SHA256 = "21f063ff93bb426d0c06b7a55e7eb9efcfe62c0dddd9a908e9877e18710128df"
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
            _unpack(verify_wheel(_download_wheel(cache_dir)), home)
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


def verify_wheel(wheel: Path, expected: str = WHEEL_SHA256) -> Path:
    """``wheel`` if its SHA-256 is ``expected``; else it is deleted and StackError raised."""
    digest = hashlib.sha256()
    with wheel.open("rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        # Deleted, so that the next start downloads it again instead of failing forever.
        wheel.unlink(missing_ok=True)
        raise StackError(
            f"{wheel} has SHA-256 {digest.hexdigest()}, not the pinned {expected}; "
            "deleted it (run again to download it anew)"
        )
    return wheel


def member_target(staging: Path, info: zipfile.ZipInfo) -> Path:
    """Where a wanted member goes under ``staging``; StackError for any path leaving it.

    Wheels are zip files anyone can craft: an absolute name, a `..` part or a
    symbolic link would write (or later point) outside the server's folder.
    """
    name = info.filename
    if stat.S_ISLNK(info.external_attr >> 16):
        raise StackError(f"refusing wheel member {name!r}: a symbolic link")
    if name.startswith(("/", "\\")) or ".." in name.replace("\\", "/").split("/"):
        raise StackError(f"refusing wheel member {name!r}: its path leaves the target folder")
    if name.startswith(WHEEL_PREFIX):
        relative = name[len(WHEEL_PREFIX) :]
    elif name.startswith(LIBS_PREFIX):
        relative = "lib/" + name[len(LIBS_PREFIX) :]
    else:
        raise StackError(f"refusing wheel member {name!r}: not a part of the server")
    # Belt and braces: whatever the name holds, the resolved path must stay inside.
    target = (staging / relative).resolve()
    if not target.is_relative_to(staging.resolve()):
        raise StackError(f"refusing wheel member {name!r}: its path leaves the target folder")
    return target


def _unpack(wheel: Path, home: Path) -> None:
    log.info("unpacking tritonserver from %s into %s", wheel.name, home)
    shutil.rmtree(home, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=home.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if info.is_dir() or not wanted(info.filename):
                    continue
                target = member_target(staging, info)
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

    def metrics_url(self) -> str:
        return f"http://{HOST}:{self.settings.triton_metrics_port}/metrics"

    def exports(self) -> dict[str, str]:
        """What every client may see; the control key is given out by control_env only."""
        return {
            **inference_env(self.settings),
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
        if s.secure:
            tls = ensure_certificates(s.secrets_dir)
            argv += secured_args(tls, ensure_credentials(s.secrets_dir).triton_control_key)
        return argv + [f"--load-model={name}" for name in self._startup_models()]

    def env(self) -> Mapping[str, str]:
        return server_env(self.home)

    def is_healthy(self) -> bool:
        return http_ok(f"{self.settings.triton_http_url}/v2/health/ready")


# Behind the control key on both endpoints: loading and unloading models, and the
# protocols that reach into the host (shared memory regions, trace and log files).
CONTROLLED = ("model-repository", "shared-memory", "trace", "logging")
# HTTP has no TLS here, so its inference is for the control principal only (the serving
# CLI's probe); everybody else infers over gRPC with TLS. Health stays open for probes.
HTTP_CONTROLLED = (*CONTROLLED, "inference", "model-config")


def secured_args(tls: TlsFiles, control_key: str) -> list[str]:
    """tritonserver flags of the secured mode: gRPC over TLS, control behind the key.

    Triton takes the key only on its command line, so it shows in /proc/<pid>/cmdline
    to local users of the machine; the stack binds loopback only, and a shared host
    should mount /proc with hidepid=2.
    """
    grpc_rule = f"{','.join(CONTROLLED)}:{CONTROL_KEY_HEADER}={control_key}"
    http_rule = f"{','.join(HTTP_CONTROLLED)}:{CONTROL_KEY_HEADER}={control_key}"
    return [
        "--grpc-use-ssl=true",
        f"--grpc-server-cert={tls.server_cert}",
        f"--grpc-server-key={tls.server_key}",
        f"--grpc-restricted-protocol={grpc_rule}",
        f"--http-restricted-api={http_rule}",
    ]


def inference_env(settings: StackSettings) -> dict[str, str]:
    """The variables an inference client (the worker) needs: gRPC endpoint, and its CA."""
    env = {"STREAMREC_TRITON_URL": settings.triton_grpc_url}
    if settings.secure:
        env[TLS_CA_ENV] = str(TlsFiles.under(settings.secrets_dir).ca_cert)
    return env


def control_env(settings: StackSettings) -> dict[str, str]:
    """The variables the serving CLI needs; secured, they hold the control key (a secret)."""
    env = {"STREAMREC_TRITON_HTTP_URL": settings.triton_http_url}
    if settings.secure:
        env[CONTROL_KEY_ENV] = ensure_credentials(settings.secrets_dir).triton_control_key
    return env


def http_ok(url: str, timeout_s: float = 1.0) -> bool:
    """True if GET `url` answers 200; never raises."""
    # No proxy: an http_proxy in the environment must not swallow loopback calls.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout_s) as response:
            return bool(response.status == 200)
    except (OSError, ValueError, urllib.error.URLError):
        return False
