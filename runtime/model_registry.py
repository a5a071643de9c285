"""A small client of MLflow's REST API 2.0: runs, the model registry and proxied artifacts.

Training logs a run and registers a model version through it; publishing resolves a
``models:/<name>/<version>`` or ``models:/<name>@<alias>`` URI and downloads that
version's files. It is the standard library only: MLflow's own client (mlflow-skinny)
would move pins the project's environment holds (see jobs/localstack/mlflow_server.py),
and the few calls below are all the pipeline makes.

Artifacts travel through the tracking server's ``mlflow-artifacts`` proxy (a server
started with ``--serve-artifacts``), so the tracking URI is all a client needs.
Endpoints: https://mlflow.org/docs/latest/api_reference/rest-api.html
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
# The local stack's server (jobs/localstack/mlflow_server.py, default port).
DEFAULT_TRACKING_URI = "http://127.0.0.1:5000"
REGISTERED_MODEL = "streamrec-ranker"
MODELS_SCHEME = "models:/"
ARTIFACTS_SCHEME = "mlflow-artifacts"
# The run's artifact folder that holds the model directory (the version's source).
MODEL_ARTIFACT_PATH = "model"

_API = "/api/2.0/mlflow"
_ARTIFACTS_API = "/api/2.0/mlflow-artifacts/artifacts"
# MLflow's limits per log-batch request (params 100, metrics 1000, tags 100).
_BATCH_PARAMS = 100
_BATCH_METRICS = 1000
_PARAM_VALUE_MAX = 6000
# Registered model names: letters, digits and . _ - (what MLflow's UI shows safely).
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_ALIAS = r"[A-Za-z_][A-Za-z0-9_-]*"
_MODEL_URI = re.compile(rf"models:/(?P<name>{_NAME})(?:/(?P<version>[0-9]+)|@(?P<alias>{_ALIAS}))")


class RegistryError(RuntimeError):
    """The registry refused a call, could not be reached, or a URI is malformed."""

    def __init__(self, message: str, error_code: str = "") -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True)
class ModelReference:
    """What a ``models:/`` URI names: one version, or the version an alias points at."""

    name: str
    version: str | None = None
    alias: str | None = None

    def __str__(self) -> str:
        if self.alias is not None:
            return f"{MODELS_SCHEME}{self.name}@{self.alias}"
        return f"{MODELS_SCHEME}{self.name}/{self.version}"


@dataclass(frozen=True)
class ModelVersion:
    name: str
    version: str
    source: str
    run_id: str


@dataclass(frozen=True)
class Run:
    run_id: str
    artifact_uri: str


def is_model_uri(text: str) -> bool:
    return text.startswith(MODELS_SCHEME)


def parse_model_uri(text: str) -> ModelReference:
    """``models:/<name>/<version>`` or ``models:/<name>@<alias>``; RegistryError otherwise."""
    match = _MODEL_URI.fullmatch(text.strip())
    if match is None:
        raise RegistryError(
            f"{text!r} is not a model URI: use models:/<name>/<version> (e.g. "
            f"models:/{REGISTERED_MODEL}/3) or models:/<name>@<alias> (e.g. "
            f"models:/{REGISTERED_MODEL}@champion)"
        )
    return ModelReference(match["name"], match["version"], match["alias"])


def artifact_path(uri: str) -> str:
    """The server-side path of an ``mlflow-artifacts:`` URI (what the proxy endpoints take).

    ``mlflow-artifacts:/1/<run>/artifacts/model`` and the form with a host,
    ``mlflow-artifacts://host:5000/1/<run>/artifacts/model``, both give
    ``1/<run>/artifacts/model``. Other schemes mean the server stores artifacts where
    this client cannot reach them (no ``--serve-artifacts``).
    """
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != ARTIFACTS_SCHEME:
        raise RegistryError(
            f"artifact URI {uri!r} is not {ARTIFACTS_SCHEME}:/...: start the tracking server "
            "with --serve-artifacts (the local stack's does), so artifacts go through it"
        )
    path = _relative(parsed.path.lstrip("/"))
    if not path:
        raise RegistryError(f"artifact URI {uri!r} names no path")
    return path


def _relative(path: str) -> str:
    """``path`` as a clean relative POSIX path; RegistryError if it climbs out ("..")."""
    parts = [part for part in PurePosixPath(path).parts if part not in ("", ".")]
    if any(part == ".." for part in parts) or PurePosixPath(path).is_absolute():
        raise RegistryError(f"artifact path {path!r} leaves its folder")
    return "/".join(parts)


def tracking_uri(environ: Mapping[str, str] | None = None, default: str = "") -> str:
    env = os.environ if environ is None else environ
    return env.get(TRACKING_URI_ENV, "").strip() or default


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def files_under(directory: Path) -> list[Path]:
    """Every regular file below ``directory`` (relative paths, sorted; hidden ones skipped)."""
    found = []
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            found.append(relative)
    return found


class RegistryClient:
    """Calls one tracking server (``http://host:port``); every call raises RegistryError."""

    def __init__(self, uri: str, timeout_s: float = 60.0) -> None:
        parsed = urllib.parse.urlparse(uri)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise RegistryError(
                f"{TRACKING_URI_ENV}={uri!r}: an http(s):// tracking server is needed "
                "(a local path or databricks URI is not supported here)"
            )
        self.uri = uri.rstrip("/")
        self.timeout_s = timeout_s

    # --- transport -----------------------------------------------------------------

    def _open(self, request: urllib.request.Request) -> Any:
        try:
            return urllib.request.urlopen(request, timeout=self.timeout_s)
        except urllib.error.HTTPError as error:
            body = error.read().decode(errors="replace")
            code, message = "", body[:500]
            try:
                parsed = json.loads(body)
                code, message = parsed.get("error_code", ""), parsed.get("message", message)
            except (ValueError, AttributeError):
                pass
            raise RegistryError(
                f"{request.get_method()} {request.full_url}: {error.code} {code} {message}".strip(),
                code,
            ) from None
        except (urllib.error.URLError, OSError) as error:
            raise RegistryError(f"cannot reach the MLflow server at {self.uri}: {error}") from None

    def _call(
        self,
        method: str,
        endpoint: str,
        payload: Mapping[str, Any] | None = None,
        query: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        url = f"{self.uri}{_API}/{endpoint}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with self._open(request) as response:
            body = response.read()
        loaded: dict[str, Any] = json.loads(body) if body else {}
        return loaded

    def healthy(self) -> bool:
        try:
            with self._open(urllib.request.Request(f"{self.uri}/health")) as response:
                return bool(response.status == 200)
        except RegistryError:
            return False

    # --- tracking ------------------------------------------------------------------

    def experiment_id(self, name: str) -> str:
        """The id of experiment ``name``, created if missing."""
        try:
            found = self._call("GET", "experiments/get-by-name", query={"experiment_name": name})
            return str(found["experiment"]["experiment_id"])
        except RegistryError as error:
            if error.error_code != "RESOURCE_DOES_NOT_EXIST":
                raise
        try:
            return str(self._call("POST", "experiments/create", {"name": name})["experiment_id"])
        except RegistryError as error:  # created by someone else in between
            if error.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
            return self.experiment_id(name)

    def create_run(self, experiment_id: str, name: str, tags: Mapping[str, str]) -> Run:
        payload = {
            "experiment_id": experiment_id,
            "run_name": name,
            "start_time": int(time.time() * 1000),
            "tags": [{"key": k, "value": v} for k, v in tags.items()],
        }
        info = self._call("POST", "runs/create", payload)["run"]["info"]
        return Run(info["run_id"], info["artifact_uri"])

    def log_batch(
        self,
        run_id: str,
        params: Mapping[str, str] = {},
        metrics: Mapping[str, float] = {},
        tags: Mapping[str, str] = {},
    ) -> None:
        """Params, metrics (step 0, now) and tags, in as many requests as MLflow's limits need."""
        now = int(time.time() * 1000)
        param_rows = [{"key": k, "value": str(v)[:_PARAM_VALUE_MAX]} for k, v in params.items()]
        metric_rows = [
            {"key": k, "value": float(v), "timestamp": now, "step": 0} for k, v in metrics.items()
        ]
        tag_rows = [{"key": k, "value": v} for k, v in tags.items()]
        for rows in _chunks(param_rows, _BATCH_PARAMS):
            self._call("POST", "runs/log-batch", {"run_id": run_id, "params": rows})
        for rows in _chunks(metric_rows, _BATCH_METRICS):
            self._call("POST", "runs/log-batch", {"run_id": run_id, "metrics": rows})
        for rows in _chunks(tag_rows, _BATCH_PARAMS):
            self._call("POST", "runs/log-batch", {"run_id": run_id, "tags": rows})

    def finish_run(self, run_id: str, status: str = "FINISHED") -> None:
        payload = {"run_id": run_id, "status": status, "end_time": int(time.time() * 1000)}
        self._call("POST", "runs/update", payload)

    # --- artifacts (through the server's proxy) ------------------------------------

    def upload_file(self, local: Path, uri: str) -> None:
        """``local`` to the artifact ``uri`` (``mlflow-artifacts:/...``), streamed."""
        url = f"{self.uri}{_ARTIFACTS_API}/{urllib.parse.quote(artifact_path(uri))}"
        with local.open("rb") as body:
            request = urllib.request.Request(url, data=body, method="PUT")
            request.add_header("Content-Length", str(local.stat().st_size))
            request.add_header("Content-Type", "application/octet-stream")
            with self._open(request):
                pass

    def upload_directory(self, directory: Path, uri: str) -> list[str]:
        """Every file below ``directory`` under ``uri``; the relative paths uploaded."""
        uploaded = []
        for relative in files_under(directory):
            self.upload_file(directory / relative, f"{uri.rstrip('/')}/{relative.as_posix()}")
            uploaded.append(relative.as_posix())
        return uploaded

    def list_artifacts(self, uri: str) -> list[tuple[str, bool]]:
        """(name, is_dir) of the entries directly under ``uri``."""
        listed = self._call_artifacts_list(artifact_path(uri))
        entries = []
        for entry in listed:
            name = PurePosixPath(entry["path"]).name
            entries.append((_relative(name), bool(entry.get("is_dir", False))))
        return entries

    def _call_artifacts_list(self, path: str) -> list[dict[str, Any]]:
        url = f"{self.uri}{_ARTIFACTS_API}?" + urllib.parse.urlencode({"path": path})
        with self._open(urllib.request.Request(url)) as response:
            body = response.read()
        files: list[dict[str, Any]] = (json.loads(body) if body else {}).get("files", [])
        return files

    def download_directory(self, uri: str, destination: Path) -> list[str]:
        """Everything under ``uri`` into ``destination`` (kept inside it); the paths written."""
        written: list[str] = []
        self._download(uri.rstrip("/"), destination, "", written)
        if not written:
            raise RegistryError(f"no artifacts under {uri}")
        return written

    def _download(self, uri: str, destination: Path, prefix: str, written: list[str]) -> None:
        for name, is_dir in self.list_artifacts(uri):
            relative = f"{prefix}{name}"
            if is_dir:
                self._download(f"{uri}/{name}", destination, f"{relative}/", written)
                continue
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            url = f"{self.uri}{_ARTIFACTS_API}/{urllib.parse.quote(artifact_path(uri))}/"
            request = urllib.request.Request(url + urllib.parse.quote(name))
            with self._open(request) as response, target.open("wb") as out:
                shutil.copyfileobj(response, out)
            written.append(relative)

    # --- registry --------------------------------------------------------------------

    def ensure_registered_model(self, name: str, description: str = "") -> None:
        try:
            self._call(
                "POST", "registered-models/create", {"name": name, "description": description}
            )
        except RegistryError as error:
            if error.error_code != "RESOURCE_ALREADY_EXISTS":
                raise

    def create_model_version(
        self,
        name: str,
        source: str,
        run_id: str,
        tags: Mapping[str, str] = {},
        description: str = "",
    ) -> ModelVersion:
        payload = {
            "name": name,
            "source": source,
            "run_id": run_id,
            "description": description,
            "tags": [{"key": k, "value": v} for k, v in tags.items()],
        }
        return _version(self._call("POST", "model-versions/create", payload)["model_version"])

    def set_alias(self, name: str, alias: str, version: str) -> None:
        payload = {"name": name, "alias": alias, "version": version}
        self._call("POST", "registered-models/alias", payload)

    def set_model_version_tag(self, name: str, version: str, key: str, value: str) -> None:
        payload = {"name": name, "version": version, "key": key, "value": value}
        self._call("POST", "model-versions/set-tag", payload)

    def model_version_tags(self, name: str, version: str) -> dict[str, str]:
        found = self._call("GET", "model-versions/get", query={"name": name, "version": version})
        return {t["key"]: t["value"] for t in found["model_version"].get("tags", [])}

    def search_versions(self, name: str) -> list[ModelVersion]:
        """Every version of the registered model ``name`` (one page: up to 1,000)."""
        escaped = name.replace("'", "\\'")
        query = {"filter": f"name='{escaped}'", "max_results": "1000"}
        found = self._call("GET", "model-versions/search", query=query)
        return [_version(v) for v in found.get("model_versions", [])]

    def get_model_version(self, name: str, version: str) -> ModelVersion:
        found = self._call("GET", "model-versions/get", query={"name": name, "version": version})
        return _version(found["model_version"])

    def get_by_alias(self, name: str, alias: str) -> ModelVersion:
        found = self._call("GET", "registered-models/alias", query={"name": name, "alias": alias})
        return _version(found["model_version"])

    def resolve(self, reference: ModelReference) -> ModelVersion:
        if reference.alias is not None:
            return self.get_by_alias(reference.name, reference.alias)
        assert reference.version is not None
        return self.get_model_version(reference.name, reference.version)

    def download_uri(self, version: ModelVersion) -> str:
        query = {"name": version.name, "version": version.version}
        return str(
            self._call("GET", "model-versions/get-download-uri", query=query)["artifact_uri"]
        )


def _version(payload: Mapping[str, Any]) -> ModelVersion:
    return ModelVersion(
        name=str(payload["name"]),
        version=str(payload["version"]),
        source=str(payload.get("source", "")),
        run_id=str(payload.get("run_id", "")),
    )


def fetch_model(reference: str | ModelReference, destination: Path, uri: str) -> ModelVersion:
    """Download the files of the version ``reference`` names into ``destination``."""
    parsed = parse_model_uri(reference) if isinstance(reference, str) else reference
    client = RegistryClient(uri)
    version = client.resolve(parsed)
    client.download_directory(client.download_uri(version), destination)
    return version
