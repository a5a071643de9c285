"""The online store as shared ground: Feast's Redis format, the batched row writer and reader.

The feature writer writes through :class:`~schemas.online.redis_store.OnlineStoreWriter`;
the worker, the demo and the benchmarks read through
:func:`~schemas.online.redis_store.read_rows` (or its queue/decode halves inside
a pipeline of their own). Both speak :mod:`schemas.online.feast_format`, the
bytes ``feast.FeatureStore`` itself reads, for the views of :mod:`schemas.views`.
Beside Feast's hashes, :mod:`schemas.online.covisit` lays out the co-visitation
sets the writer counts from the stream and the worker's ``covisit`` route reads.
:mod:`schemas.online.connect` gives every role its client, for one Redis or a Redis
Cluster, from one URL; :mod:`schemas.online.cluster_calls` runs the writer's
scripts on a cluster.
"""
