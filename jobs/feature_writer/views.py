"""The four online feature views as the writer and readers see them.

``feature_repo/definitions.py`` declares the same views to Feast; a test checks
that the registry built from it agrees with these specs (names, join keys,
features and dtypes), so the two cannot drift apart silently.
"""

from __future__ import annotations

from jobs.feature_writer.feast_format import Feature, FeatureKind, ViewSpec

PROJECT = "streamrec"

_SEQUENCE = (
    Feature("item_ids", FeatureKind.INT64_LIST),
    Feature("category_ids", FeatureKind.INT64_LIST),
    Feature("behaviors", FeatureKind.STRING_LIST),
    Feature("event_ts", FeatureKind.INT64_LIST),
)
_COUNTS = tuple(Feature(name, FeatureKind.INT64) for name in ("pv", "cart", "fav", "buy"))

USER_RECENT_CLICKS = ViewSpec("user_recent_clicks", "user_id", _SEQUENCE)

USER_CLICK_WINDOW = ViewSpec(
    "user_click_window",
    "user_id",
    (
        *_SEQUENCE,
        *(Feature(f"{c.name}_count", FeatureKind.INT64) for c in _COUNTS),
        Feature("window_start", FeatureKind.INT64),
    ),
)

ITEM_TRENDS = ViewSpec(
    "item_trends",
    "item_id",
    (
        Feature("category_id", FeatureKind.INT64),
        *_COUNTS,
        Feature("conversion", FeatureKind.DOUBLE),
        Feature("window_start", FeatureKind.INT64),
    ),
)

CATEGORY_TRENDS = ViewSpec(
    "category_trends",
    "category_id",
    (
        *_COUNTS,
        Feature("conversion", FeatureKind.DOUBLE),
        Feature("top_item_ids", FeatureKind.INT64_LIST),
        Feature("top_item_scores", FeatureKind.INT64_LIST),
        Feature("window_start", FeatureKind.INT64),
    ),
)

VIEWS: dict[str, ViewSpec] = {
    spec.name: spec
    for spec in (USER_RECENT_CLICKS, USER_CLICK_WINDOW, ITEM_TRENDS, CATEGORY_TRENDS)
}


def view_spec(view: str | ViewSpec) -> ViewSpec:
    """The spec of a view given by name (or the spec itself)."""
    if isinstance(view, ViewSpec):
        return view
    try:
        return VIEWS[view]
    except KeyError:
        raise KeyError(f"unknown feature view {view!r}; known: {sorted(VIEWS)}") from None
