from __future__ import annotations

import faiss
import numpy as np
import numpy.typing as npt
import pytest

from inference.worker.errors import SettingsError
from inference.worker.item_index import (
    AUTO_EXACT_UP_TO,
    IndexChoice,
    build_index,
    index_bytes,
    use_search_threads,
)


def clustered(items: int, dim: int = 16, seed: int = 0) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(32, dim))
    return (centres[rng.integers(0, 32, items)] + rng.normal(scale=0.2, size=(items, dim))).astype(
        np.float32
    )


def test_auto_is_exact_for_small_catalogues_and_an_inverted_file_above() -> None:
    assert IndexChoice().resolve(AUTO_EXACT_UP_TO) == IndexChoice("Flat", "")
    assert IndexChoice().resolve(AUTO_EXACT_UP_TO + 1) == IndexChoice("HNSW32", "efSearch=128")
    # Search parameters given with auto are kept for the graph auto picks.
    assert IndexChoice(search="efSearch=64").resolve(10**6).search == "efSearch=64"
    # A named index is taken as given.
    assert IndexChoice("HNSW32", "efSearch=64").resolve(10) == IndexChoice("HNSW32", "efSearch=64")


def test_the_graph_index_finds_most_of_the_exact_top_k() -> None:
    vectors = clustered(5000)
    queries = np.ascontiguousarray(vectors[::250] + 0.1, dtype=np.float32)
    exact = build_index(vectors, IndexChoice("Flat")).search(queries, 20)[1]
    graph = build_index(vectors, IndexChoice("HNSW32", "efSearch=128"))
    found = graph.search(queries, 20)[1]
    hits = sum(len(set(a) & set(b)) for a, b in zip(exact, found, strict=True))
    assert hits / exact.size >= 0.9


def test_exact_index_returns_the_inner_product_top_k() -> None:
    vectors = clustered(500)
    query = np.ascontiguousarray(vectors[:3] * 2, dtype=np.float32)
    _, found = build_index(vectors, IndexChoice("Flat")).search(query, 10)
    expected = np.argsort(-(query @ vectors.T), axis=1)[:, :10]
    np.testing.assert_array_equal(found, expected)


def test_inverted_file_with_every_list_probed_equals_exact_search() -> None:
    vectors = clustered(3000)
    queries = vectors[::100]
    exact = build_index(vectors, IndexChoice("Flat")).search(queries, 20)[1]
    every_list = build_index(vectors, IndexChoice("IVF16,Flat", "nprobe=16"))
    np.testing.assert_array_equal(every_list.search(queries, 20)[1], exact)
    # One list of sixteen misses neighbours: the probe count is a real trade-off.
    one_list = build_index(vectors, IndexChoice("IVF16,Flat", "nprobe=1"))
    found = one_list.search(queries, 20)[1]
    assert not np.array_equal(found, exact)


def test_builds_are_reproducible_for_the_same_vectors() -> None:
    vectors = clustered(3000)
    choice = IndexChoice("IVF16,Flat", "nprobe=2")
    first = build_index(vectors, choice).search(vectors[:20], 10)[1]
    second = build_index(vectors, choice).search(vectors[:20], 10)[1]
    np.testing.assert_array_equal(first, second)
    assert index_bytes(build_index(vectors, choice)) > vectors.nbytes


def test_a_bad_factory_string_or_search_parameter_is_a_settings_error() -> None:
    vectors = clustered(100)
    with pytest.raises(SettingsError, match="not a Faiss factory string"):
        build_index(vectors, IndexChoice("NoSuchIndex"))
    with pytest.raises(SettingsError, match="do not apply"):
        build_index(vectors, IndexChoice("Flat", "nprobe=4"))


def test_search_threads_are_set_for_the_process_and_0_keeps_faiss_default() -> None:
    default = faiss.omp_get_max_threads()
    try:
        assert use_search_threads(1) == 1 == faiss.omp_get_max_threads()
        assert use_search_threads(0) == 1  # 0 changes nothing
        faiss.omp_set_num_threads(default)
        assert use_search_threads(0) == default
        with pytest.raises(SettingsError, match="recall threads"):
            use_search_threads(-1)
    finally:
        faiss.omp_set_num_threads(default)
