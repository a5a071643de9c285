"""streamrec's online feature views for Feast: the only module ``feast apply`` imports here.

The views are defined once in :mod:`schemas.views` (names, entities, features
and their types, TTLs); this module only dresses them as Feast objects. Rows are
pushed by ``jobs.feature_writer`` straight into Redis in Feast's format; the
push sources make that path explicit to Feast, and their file sources exist
because Feast requires a batch source (nothing reads them in this project).
Times in features are epoch milliseconds; the row's event time is the update's
``latest_ts`` (fresh clicks) or ``window_end`` (windows).
"""

from feast import Entity, FeatureView, Field, FileSource, PushSource
from feast.types import Array, FeastType, Float64, Int64, String
from feast.value_type import ValueType

from schemas import views

TIMESTAMP_FIELD = "event_timestamp"

DTYPES: dict[views.FeatureKind, FeastType] = {
    views.FeatureKind.INT64: Int64,
    views.FeatureKind.DOUBLE: Float64,
    views.FeatureKind.STRING: String,
    views.FeatureKind.INT64_LIST: Array(Int64),
    views.FeatureKind.DOUBLE_LIST: Array(Float64),
    views.FeatureKind.STRING_LIST: Array(String),
}


def entity(spec: views.Entity) -> Entity:
    return Entity(name=spec.name, join_keys=[spec.join_key], value_type=ValueType.INT64)


def push_source(view: str) -> PushSource:
    """A push source over a placeholder parquet file under the repo's data folder."""
    batch = FileSource(
        name=f"{view}_batch",
        path=f"data/{view}.parquet",
        timestamp_field=TIMESTAMP_FIELD,
    )
    return PushSource(name=f"{view}_push", batch_source=batch)


def feature_view(spec: views.ViewSpec, entity_object: Entity) -> FeatureView:
    return FeatureView(
        name=spec.name,
        entities=[entity_object],
        ttl=spec.ttl,
        schema=[
            Field(name=spec.join_key, dtype=Int64),
            *(Field(name=f.name, dtype=DTYPES[f.kind]) for f in spec.features),
        ],
        source=push_source(spec.name),
        online=True,
        description=spec.description,
    )


# Feast finds its objects among this module's names, so each gets one.
user = entity(views.USER)
item = entity(views.ITEM)
category = entity(views.CATEGORY)

user_recent_clicks = feature_view(views.USER_RECENT_CLICKS, user)
user_click_window = feature_view(views.USER_CLICK_WINDOW, user)
item_trends = feature_view(views.ITEM_TRENDS, item)
category_trends = feature_view(views.CATEGORY_TRENDS, category)
