"""The online store as shared ground: the layouts its writer and readers agree on.

:mod:`schemas.online.feast_format` is Feast's Redis format, the bytes
``feast.FeatureStore`` itself reads, for the views of :mod:`schemas.views`. Beside
Feast's hashes, :mod:`schemas.online.covisit` lays out the co-visitation sets the
writer counts from the stream and the worker's ``covisit`` route reads. The client
code that writes and reads them is :mod:`runtime.online`.
"""
