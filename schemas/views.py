"""The online feature views: each defined once, here, and everything else derived from it.

A view is a changelog row (:mod:`schemas.features`, what the feature job
emits) as the online store keeps it: the row's fields marked
:func:`~schemas.features.stored` pass through under their online names, and the
view adds the features the writer computes from the row (a sequence unpacked
into arrays, a conversion rate, trending items). From these definitions come
the Feast ``FeatureView`` s (``feature_repo/definitions.py``), the writer's
rows, the Redis field layout every reader uses, and the ranker's dense inputs
(checked against the view's feature names at import).

Adding a pass-through feature is one annotated field on the changelog row plus
its computation in the feature job's SQL; a computed feature is one
:class:`Feature` in ``computed`` plus its function in the writer's rows.
"""

from __future__ import annotations

import enum
import functools
import typing
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import msgspec

from schemas.features import CategoryWindow, FeatureUpdate, ItemWindow, UserRecentEvents, UserWindow

# Feast's project name in feature_store.yaml; online keys are namespaced by it.
PROJECT = "streamrec"
# Feast's redis key_ttl_seconds (feature_store.yaml) and the writer's default: a row
# nobody updates for a week expires, which bounds Redis by the active entities. Every
# view's features describe at most the last hours, so an expired row loses nothing.
KEY_TTL_SECONDS = 7 * 24 * 3600


class FeatureKind(enum.Enum):
    """The Feast dtypes this project stores, named by their ``Value`` oneof field."""

    INT64 = "int64_val"
    DOUBLE = "double_val"
    STRING = "string_val"
    INT64_LIST = "int64_list_val"
    DOUBLE_LIST = "double_list_val"
    STRING_LIST = "string_list_val"


# Python annotation of a stored changelog field -> its online kind.
_KIND_OF_TYPE: dict[Any, FeatureKind] = {
    int: FeatureKind.INT64,
    float: FeatureKind.DOUBLE,
    str: FeatureKind.STRING,
    list[int]: FeatureKind.INT64_LIST,
    list[float]: FeatureKind.DOUBLE_LIST,
    list[str]: FeatureKind.STRING_LIST,
}


@dataclass(frozen=True)
class Feature:
    """One online feature. ``source`` is the changelog field it passes through, if any."""

    name: str
    kind: FeatureKind
    source: str | None = None


@dataclass(frozen=True)
class Entity:
    """An Int64 entity: its Feast name and its join key (also the changelog's key field)."""

    name: str
    join_key: str


@dataclass(frozen=True)
class ViewSpec:
    """One online feature view, built from one changelog row type."""

    name: str
    entity: Entity
    changelog: type[FeatureUpdate]
    features: tuple[Feature, ...]
    ttl: timedelta
    description: str

    @property
    def join_key(self) -> str:
        return self.entity.join_key

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.features)

    @functools.cached_property
    def passthrough(self) -> tuple[Feature, ...]:
        # Read once per changelog row on the writer's hot path: computed once per view.
        return tuple(f for f in self.features if f.source is not None)


def stored_features(row: type[msgspec.Struct]) -> tuple[Feature, ...]:
    """The fields of a changelog row marked ``stored``, as online features, in field order."""
    features = []
    for name, hint in typing.get_type_hints(row, include_extras=True).items():
        online = _online_name(hint)
        if online is None:
            continue
        base = _strip_annotations(hint)
        kind = _KIND_OF_TYPE.get(base)
        if kind is None:
            raise TypeError(f"{row.__name__}.{name}: no online kind for {base!r}")
        features.append(Feature(online if isinstance(online, str) else name, kind, source=name))
    return tuple(features)


def _online_name(hint: Any) -> str | bool | None:
    """The ``stored`` mark of an annotation (a name, or True for the field's own)."""
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    for meta in hint.__metadata__:
        extra = getattr(meta, "extra", None) or {}
        if "online" in extra:
            online: str | bool = extra["online"]
            return online
    return None


def _strip_annotations(hint: Any) -> Any:
    while typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return hint


def _view(
    name: str,
    entity: Entity,
    changelog: type[FeatureUpdate],
    computed: tuple[Feature, ...],
    ttl: timedelta,
    description: str,
) -> ViewSpec:
    features = (*computed, *stored_features(changelog))
    return ViewSpec(name, entity, changelog, features, ttl, description)


USER = Entity("user", "user_id")
ITEM = Entity("item", "item_id")
CATEGORY = Entity("category", "category_id")
ENTITIES = (USER, ITEM, CATEGORY)

# A click sequence as arrays, oldest first (computed from the packed events).
SEQUENCE = (
    Feature("item_ids", FeatureKind.INT64_LIST),
    Feature("category_ids", FeatureKind.INT64_LIST),
    Feature("behaviors", FeatureKind.STRING_LIST),
    Feature("event_ts", FeatureKind.INT64_LIST),
)
CONVERSION = Feature("conversion", FeatureKind.DOUBLE)

USER_RECENT_CLICKS = _view(
    "user_recent_clicks",
    USER,
    UserRecentEvents,
    SEQUENCE,
    timedelta(hours=1),
    "A user's events of the last 30 minutes (at most 50), oldest first.",
)
USER_CLICK_WINDOW = _view(
    "user_click_window",
    USER,
    UserWindow,
    SEQUENCE,
    timedelta(days=2),
    "A user's exact event-time window: its events and counts by behaviour.",
)
ITEM_TRENDS = _view(
    "item_trends",
    ITEM,
    ItemWindow,
    (CONVERSION,),
    timedelta(days=2),
    "An item's counts by behaviour in the latest window; conversion = buy / pv.",
)
CATEGORY_TRENDS = _view(
    "category_trends",
    CATEGORY,
    CategoryWindow,
    (
        CONVERSION,
        Feature("top_item_ids", FeatureKind.INT64_LIST),
        Feature("top_item_scores", FeatureKind.INT64_LIST),
    ),
    timedelta(days=2),
    "A category's window counts and its trending items, best first.",
)

VIEWS: dict[str, ViewSpec] = {
    spec.name: spec
    for spec in (USER_RECENT_CLICKS, USER_CLICK_WINDOW, ITEM_TRENDS, CATEGORY_TRENDS)
}
VIEW_OF_CHANGELOG: dict[type[FeatureUpdate], ViewSpec] = {v.changelog: v for v in VIEWS.values()}


def view_spec(view: str | ViewSpec) -> ViewSpec:
    """The spec of a view given by name (or the spec itself)."""
    if isinstance(view, ViewSpec):
        return view
    try:
        return VIEWS[view]
    except KeyError:
        raise KeyError(f"unknown feature view {view!r}; known: {sorted(VIEWS)}") from None


def view_of_tag(tag: str) -> ViewSpec:
    """The view built from the changelog rows tagged ``tag`` (``user_window``, ...)."""
    for spec in VIEWS.values():
        if spec.changelog.__struct_config__.tag == tag:
            return spec
    raise KeyError(f"no feature view is built from changelog rows tagged {tag!r}")


def passthrough_values(spec: ViewSpec, update: FeatureUpdate) -> dict[str, Any]:
    """The stored fields of a changelog row under their online names."""
    return {f.name: getattr(update, f.source or f.name) for f in spec.passthrough}
