"""The online store's client code: connections, the batched row writer and reader.

:mod:`runtime.online.connect` gives every role its client, for one Redis or a Redis
Cluster, from one URL. The feature writer writes through
:class:`~runtime.online.redis_store.OnlineStoreWriter`; the worker, the demo and the
benchmarks read through :func:`~runtime.online.redis_store.read_rows` (or its
queue/decode halves inside a pipeline of their own). Both speak the bytes of
:mod:`schemas.online.feast_format`; :mod:`runtime.online.cluster_calls` runs the
writer's scripts on a cluster.
"""
