"""The Faiss index of the embedding route: exact for small catalogues, approximate for big ones.

An index is named the way Faiss users already name them: a factory string
(``Flat``, ``HNSW32``, ``IVF4096_HNSW32,Flat``, ...) and search parameters in
Faiss' ``ParameterSpace`` syntax (``nprobe=64``, ``efSearch=256``). Every index
uses the inner product, the score the ranker's embeddings are trained for.

``auto`` picks by catalogue size, from ``make bench-recall``'s measurements on a
2-core box with the trained embeddings (dim 32, 128-user batches). Exact search
costs about half a millisecond per batch per 1,000 items (47 ms at 100k), so it
stays exact up to :data:`AUTO_EXACT_UP_TO` items. Above, an HNSW graph (32 links
per node) searched 128 deep: recall@100 against exact 0.88 at 1M items and 0.80
at 4M, p99 40 and 49 ms per batch, where exact takes 1.1 and 2.1 s; ``efSearch=256``
buys 0.95 and 0.90 for about twice the time. Inverted files (IVF) did worse on
these embeddings at every probe count (0.68 at 4M probing a quarter of the
lists): a query's inner-product top 100 sits in lists whose centroids score low.
"""

from __future__ import annotations

from dataclasses import dataclass

import faiss
import numpy as np
import numpy.typing as npt

from inference.worker.errors import SettingsError

AUTO = "auto"
AUTO_EXACT_UP_TO = 100_000
# Faiss warns below 39 training points per list. k-means costs points x lists x
# iterations: 12 (Faiss' default is 25) train 8,192 lists for 4M items in under a minute.
TRAIN_POINTS_PER_LIST = 40
TRAIN_ITERATIONS = 12


@dataclass(frozen=True)
class IndexChoice:
    """A Faiss factory string and the search parameters applied after building."""

    factory: str = AUTO
    search: str = ""

    def resolve(self, num_items: int) -> IndexChoice:
        """The concrete choice for a catalogue of ``num_items`` (``auto`` resolved)."""
        if self.factory != AUTO:
            return self
        if num_items <= AUTO_EXACT_UP_TO:
            return IndexChoice("Flat", "")
        return IndexChoice("HNSW32", self.search or "efSearch=128")


AUTO_CHOICE = IndexChoice()


def use_search_threads(threads: int) -> int:
    """Search (and build) with ``threads`` OpenMP threads, 0 leaving Faiss' default; returns
    the count in force. Process-wide: OpenMP has one pool per process."""
    if threads < 0:
        raise SettingsError(f"recall threads must be 0 (Faiss' default) or more, not {threads}")
    if threads:
        faiss.omp_set_num_threads(threads)
    count: int = faiss.omp_get_max_threads()
    return count


def build_index(
    vectors: npt.NDArray[np.float32], choice: IndexChoice, seed: int = 0
) -> faiss.Index:
    """A trained, filled inner-product index over ``vectors`` (row n = id n).

    Training (inverted lists, quantizers) uses a seeded sample, so the same
    vectors give the same index.
    """
    concrete = choice.resolve(len(vectors))
    dim = vectors.shape[1]
    try:
        index = faiss.index_factory(dim, concrete.factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as error:
        raise SettingsError(
            f"recall index {concrete.factory!r} is not a Faiss factory string: {error}"
        ) from None
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    if not index.is_trained:
        if _is_ivf(index):
            faiss.extract_index_ivf(index).cp.niter = TRAIN_ITERATIONS
        index.train(training_sample(data, index, seed))
    index.add(data)
    if concrete.search:
        try:
            # The SWIG stub lists only the (index, int) overload; the string one exists.
            faiss.ParameterSpace().set_index_parameters(index, concrete.search)  # type: ignore[arg-type]
        except RuntimeError as error:
            raise SettingsError(
                f"recall search parameters {concrete.search!r} do not apply to "
                f"{concrete.factory!r}: {error}"
            ) from None
    return index


def training_sample(
    data: npt.NDArray[np.float32], index: faiss.Index, seed: int
) -> npt.NDArray[np.float32]:
    lists = faiss.extract_index_ivf(index).nlist if _is_ivf(index) else 1
    wanted = max(lists * TRAIN_POINTS_PER_LIST, 10_000)
    if wanted >= len(data):
        return data
    rows = np.random.default_rng(seed).choice(len(data), wanted, replace=False)
    sample: npt.NDArray[np.float32] = data[np.sort(rows)]
    return sample


def _is_ivf(index: faiss.Index) -> bool:
    try:
        faiss.extract_index_ivf(index)
    except RuntimeError:
        return False
    return True


def index_bytes(index: faiss.Index) -> int:
    """The index's size once serialized: its vectors, codes and graph (the bulk of its memory)."""
    return int(faiss.serialize_index(index).nbytes)
