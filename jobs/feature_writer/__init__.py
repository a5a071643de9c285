"""The feature writer: the ``feature-updates`` changelog into Feast's online store on Redis.

Rows are written straight to Redis in Feast 0.67's exact format (see
:mod:`schemas.online.feast_format`), one pipeline per batch, so
``FeatureStore.get_online_features`` reads them as if Feast had written them;
:func:`runtime.online.redis_store.read_rows` is the matching fast reader.
"""
