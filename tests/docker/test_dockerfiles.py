"""The project's Dockerfiles: every COPY source exists; exposed ports are the code's."""

from __future__ import annotations

import re

from tests.docker.manifests import REPO, code_ports, copy_sources, dockerfiles


def test_there_are_images_for_the_app_and_flink() -> None:
    assert {p.name for p in dockerfiles()} == {"app.Dockerfile", "flink.Dockerfile"}


def test_every_copy_source_exists() -> None:
    for dockerfile in dockerfiles():
        sources = copy_sources(dockerfile)
        assert sources, dockerfile
        for source in sources:
            assert (REPO / source).exists(), f"{dockerfile.name}: COPY {source} does not exist"


def test_exposed_ports_are_the_code_defaults() -> None:
    ports = code_ports()
    exposed = {
        p.name: {int(n) for n in re.findall(r"^EXPOSE (.+)$", p.read_text(), re.M)[0].split()}
        for p in dockerfiles()
    }
    assert exposed["app.Dockerfile"] == {
        ports["worker-metrics"],
        ports["drift-metrics"],
        ports["outcome-metrics"],
    }
    assert {ports["flink-rest"], ports["flink-rpc"]} <= exposed["flink.Dockerfile"]


def test_base_images_name_no_registry_host() -> None:
    for dockerfile in dockerfiles():
        for image in re.findall(r"^FROM (\S+)", dockerfile.read_text(), re.M):
            assert "." not in image.split("/")[0] or "/" not in image, image
