"""The secured stack for real: Redis over TLS with ACL users, Triton's gRPC over TLS with a key.

One Redis and one Triton, started in the secured mode on free ports in a temporary
home, answer every test of this module.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from inference.serving import control, probe, repository
from inference.serving.errors import ServingError
from inference.serving.settings import GRPC_CONTROL_KEY_HEADER
from inference.worker.errors import RankerUnavailable
from inference.worker.inventory import mark, out_of_stock
from inference.worker.scoring import TritonScorer
from jobs.feature_writer.covisit import CovisitOptions, script_calls
from jobs.feature_writer.rows import ConversionOptions, to_rows
from jobs.localstack import Stack, StackSettings
from jobs.localstack.credentials import ensure_credentials
from jobs.localstack.redis_acl import grant_project
from jobs.localstack.redis_server import redis_url_for
from jobs.localstack.tls import TlsFiles
from jobs.localstack.triton_server import control_env, inference_env
from runtime.online.redis_store import OnlineStoreWriter, read_neighbours, read_rows
from schemas.online.covisit import Visit
from schemas.views import PROJECT, USER_CLICK_WINDOW
from tests.jobs.feature_writer.samples import T0, item_window, user_window
from tests.support.stacks import own_stack_settings

pytestmark = pytest.mark.integration
MODEL = "ranker_python"


@dataclass(frozen=True)
class Secured:
    settings: StackSettings
    models: Path

    @property
    def ca(self) -> str:
        return str(TlsFiles.under(self.settings.secrets_dir).ca_cert)

    def client(self, user: str) -> redis.Redis:
        return redis.Redis.from_url(redis_url_for(self.settings, user), socket_timeout=5)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    from tests.inference.serving.artifacts import write_serving_artifacts

    root = tmp_path_factory.mktemp("secured")
    models = root / "models"
    repository.publish(write_serving_artifacts(root / "artifacts"), models, [MODEL])
    settings = own_stack_settings(
        root / "home", triton_model_repository=models, triton_models=(MODEL,), secure=True
    )
    stack = Stack(settings)
    stack.up(["redis", "triton"])
    try:
        yield Secured(settings, models)
    finally:
        stack.down(["redis", "triton"])


# --- Redis ---


def test_the_writer_runs_its_whole_write_path(secured: Secured) -> None:
    writer = secured.client("writer")
    rows = to_rows([user_window(7), item_window(101)], ConversionOptions())
    visits = [(7, Visit(T0, 101, (102, 103)))]
    result = OnlineStoreWriter(writer).write(rows, script_calls(visits, CovisitOptions()))
    assert result.written == 2 and result.also == (1,)
    mark(writer, out_of_stock=[5, 6], back_in_stock=[6])
    reader = secured.client("reader")
    assert read_rows(reader, USER_CLICK_WINDOW, [7])[0] is not None
    [neighbours] = read_neighbours(reader, [101], 10, PROJECT)
    assert sorted(neighbours) == [(102, 1.0), (103, 1.0)]
    assert out_of_stock(reader) == {5}


def test_the_reader_reads_but_may_not_write(secured: Secured) -> None:
    reader = secured.client("reader")
    assert isinstance(out_of_stock(reader), set)
    with pytest.raises(redis.exceptions.NoPermissionError):
        mark(reader, out_of_stock=[9])
    with pytest.raises(redis.exceptions.NoPermissionError):
        reader.hset(f"x{PROJECT}", "f", "v")
    with pytest.raises(redis.exceptions.NoPermissionError):
        OnlineStoreWriter(reader).write(to_rows([item_window(102)], ConversionOptions()))


def test_writer_and_reader_stay_within_the_project_keys(secured: Secured) -> None:
    for user in ("writer", "reader"):
        with pytest.raises(redis.exceptions.NoPermissionError):
            secured.client(user).get("elsewhere")
        with pytest.raises(redis.exceptions.NoPermissionError):
            secured.client(user).flushall()


def test_a_granted_project_opens_its_keys_to_writer_and_reader_and_no_other(
    secured: Secured,
) -> None:
    run, other = f"{PROJECT}_run_1", f"{PROJECT}_run_2"
    rows = to_rows([user_window(8)], ConversionOptions())
    with pytest.raises(redis.exceptions.NoPermissionError):
        OnlineStoreWriter(secured.client("writer"), project=run).write(rows)
    grant_project(secured.client("admin"), run)
    assert OnlineStoreWriter(secured.client("writer"), project=run).write(rows).written == 1
    reader = secured.client("reader")
    assert read_rows(reader, USER_CLICK_WINDOW, [8], project=run)[0] is not None
    with pytest.raises(redis.exceptions.NoPermissionError):
        OnlineStoreWriter(reader, project=run).write(rows)
    with pytest.raises(redis.exceptions.NoPermissionError):
        OnlineStoreWriter(secured.client("writer"), project=other).write(rows)
    # The grant added a project: the stack's own is still open.
    assert read_rows(reader, USER_CLICK_WINDOW, [7])[0] is not None


def test_no_password_a_wrong_one_and_the_default_user_are_refused(secured: Secured) -> None:
    port = secured.settings.redis_port
    tls = {"ssl": True, "ssl_ca_certs": secured.ca, "socket_timeout": 5}
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(port=port, **tls).ping()  # type: ignore[arg-type]
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(port=port, username="reader", password="wrong", **tls).ping()  # type: ignore[arg-type]
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(port=port, username="default", password="", **tls).ping()  # type: ignore[arg-type]


def test_plaintext_and_untrusted_connections_are_refused(secured: Secured) -> None:
    password = ensure_credentials(secured.settings.secrets_dir).redis["admin"]
    port = secured.settings.redis_port
    with pytest.raises(redis.exceptions.ConnectionError):
        redis.Redis(port=port, username="admin", password=password, socket_timeout=5).ping()
    # TLS without our CA: the server's certificate is not trusted.
    with pytest.raises(redis.exceptions.ConnectionError):
        redis.Redis(port=port, username="admin", password=password, ssl=True).ping()


# --- Triton ---


def _control(secured: Secured, key: str = "") -> control.TritonControl:
    return control.TritonControl(secured.settings.triton_http_url, timeout_s=60, control_key=key)


def test_model_control_needs_the_key_on_both_endpoints(secured: Secured) -> None:
    import tritonclient.grpc as grpcclient  # type: ignore[import-untyped]
    from tritonclient.utils import InferenceServerException  # type: ignore[import-untyped]

    key = control_env(secured.settings)["STREAMREC_TRITON_CONTROL_KEY"]
    with pytest.raises(ServingError):
        _control(secured).load(MODEL)
    with pytest.raises(ServingError):
        _control(secured, "not-the-key").index()
    with pytest.raises(ServingError):  # inference over plaintext HTTP is the key's too
        _control(secured).infer(MODEL, probe.probe_inputs(50, 10))
    served = control.rollout(_control(secured, key), secured.models / MODEL)
    assert _control(secured, key).ready_versions(MODEL) == [served]

    url = secured.settings.triton_grpc_url
    client = grpcclient.InferenceServerClient(url, ssl=True, root_certificates=secured.ca)
    try:
        with pytest.raises(InferenceServerException):
            client.unload_model(MODEL)
        client.load_model(MODEL, headers={GRPC_CONTROL_KEY_HEADER: key})
        assert client.is_model_ready(MODEL)  # health stays open
    finally:
        client.close()


def test_inference_over_tls_with_the_ca_and_not_in_plaintext(secured: Secured) -> None:
    key = control_env(secured.settings)["STREAMREC_TRITON_CONTROL_KEY"]
    control.rollout(_control(secured, key), secured.models / MODEL)
    env = inference_env(secured.settings)
    limits = repository.read_limits(secured.models / MODEL / "1")
    inputs = probe.probe_inputs(*limits)

    async def score(tls_ca: str) -> str:
        scorer = TritonScorer(env["STREAMREC_TRITON_URL"], MODEL, 10.0, 1, tls_ca)
        try:
            scores, version = await scorer.score(inputs)
            assert probe.check_scores(scores, inputs) == ""
            return version
        finally:
            await scorer.close()

    assert asyncio.run(score(env["STREAMREC_TRITON_TLS_CA"])).startswith(f"{MODEL}:")
    with pytest.raises(RankerUnavailable):
        asyncio.run(score(""))


def test_secrets_stay_out_of_the_logs_and_the_exports(secured: Secured) -> None:
    stack = Stack(secured.settings)
    exported = " ".join(stack.exports(["redis", "triton"]).values())
    secrets = ensure_credentials(secured.settings.secrets_dir).secrets()
    assert not any(secret in exported for secret in secrets)
    for name in ("redis", "triton"):
        logged = stack.services[name].log_path.read_text()
        assert not any(secret in logged for secret in secrets), name
