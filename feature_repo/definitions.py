"""streamrec's online feature views: the only module ``feast apply`` imports here.

Rows are pushed by ``jobs.feature_writer`` straight into Redis in Feast's format;
the push sources make that path explicit to Feast, and their file sources exist
because Feast requires a batch source (nothing reads them in this project).
Times in features are epoch milliseconds; the row's event time is the update's
``latest_ts`` (fresh clicks) or ``window_end`` (windows).
``jobs/feature_writer/views.py`` mirrors these definitions; a test keeps them equal.
"""

from datetime import timedelta

from feast import Entity, FeatureView, Field, FileSource, PushSource
from feast.types import Array, Float64, Int64, String
from feast.value_type import ValueType

TIMESTAMP_FIELD = "event_timestamp"

user = Entity(name="user", join_keys=["user_id"], value_type=ValueType.INT64)
item = Entity(name="item", join_keys=["item_id"], value_type=ValueType.INT64)
category = Entity(name="category", join_keys=["category_id"], value_type=ValueType.INT64)


def push_source(view: str) -> PushSource:
    """A push source over a placeholder parquet file under the repo's data folder."""
    batch = FileSource(
        name=f"{view}_batch",
        path=f"data/{view}.parquet",
        timestamp_field=TIMESTAMP_FIELD,
    )
    return PushSource(name=f"{view}_push", batch_source=batch)


SEQUENCE = [
    Field(name="item_ids", dtype=Array(Int64)),
    Field(name="category_ids", dtype=Array(Int64)),
    Field(name="behaviors", dtype=Array(String)),
    Field(name="event_ts", dtype=Array(Int64)),
]
COUNTS = [Field(name=name, dtype=Int64) for name in ("pv", "cart", "fav", "buy")]

user_recent_clicks = FeatureView(
    name="user_recent_clicks",
    entities=[user],
    ttl=timedelta(hours=1),
    schema=[Field(name="user_id", dtype=Int64), *SEQUENCE],
    source=push_source("user_recent_clicks"),
    online=True,
    description="A user's events of the last 30 minutes (at most 50), oldest first.",
)

user_click_window = FeatureView(
    name="user_click_window",
    entities=[user],
    ttl=timedelta(days=2),
    schema=[
        Field(name="user_id", dtype=Int64),
        *SEQUENCE,
        *(Field(name=f"{c.name}_count", dtype=Int64) for c in COUNTS),
        Field(name="window_start", dtype=Int64),
    ],
    source=push_source("user_click_window"),
    online=True,
    description="A user's exact event-time window: its events and counts by behaviour.",
)

item_trends = FeatureView(
    name="item_trends",
    entities=[item],
    ttl=timedelta(days=2),
    schema=[
        Field(name="item_id", dtype=Int64),
        Field(name="category_id", dtype=Int64),
        *COUNTS,
        Field(name="conversion", dtype=Float64),
        Field(name="window_start", dtype=Int64),
    ],
    source=push_source("item_trends"),
    online=True,
    description="An item's counts by behaviour in the latest window; conversion = buy / pv.",
)

category_trends = FeatureView(
    name="category_trends",
    entities=[category],
    ttl=timedelta(days=2),
    schema=[
        Field(name="category_id", dtype=Int64),
        *COUNTS,
        Field(name="conversion", dtype=Float64),
        Field(name="top_item_ids", dtype=Array(Int64)),
        Field(name="top_item_scores", dtype=Array(Int64)),
        Field(name="window_start", dtype=Int64),
    ],
    source=push_source("category_trends"),
    online=True,
    description="A category's window counts and its trending items, best first.",
)
