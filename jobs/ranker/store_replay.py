"""Training rows from a replay of the online store: the candidate lists serving ranks.

The worker ranks what recall proposes from the online store's state at the
request's time. To learn that task, training replays the events in time order,
keeps the same state (each user's fresh view and history, the co-visitation
counts, the category trends, the item windows) and, after the events chosen as
requests, recalls with the worker's own functions (``schemas.recall``) and
computes the worker's candidate features (``schemas.candidates``). A row is one
request with its real candidate list; its labels are the items the user touched
in the next ``HORIZON_MS`` (what ``make eval-online`` scores); the candidates
the user did not touch are the negatives.

The state follows the writer and the feature job as closely as a replay in
memory can: the fresh view is the user's last ``SEQUENCE_LIMIT`` events of the
``HORIZON_MS`` up to the newest; co-visits pair an event with the user's distinct
other items of the window before it; a category's trends are its items' weighted
counts over the latest window that has closed (``TREND_WEIGHTS``, ``TOP_ITEMS``).
Differences left (Redis' cut of each co-visitation set to its best members, the
writer's lag) change a few neighbours at the margin, never the shape of a row.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from jobs.ranker.events import BEHAVIOR_CODES, Events
from jobs.ranker.windows import F32, WindowCounter, item_dense, latest_window_counts, user_dense
from schemas.candidates import CandidateInput, RequestState, candidate_input
from schemas.features import TREND_WEIGHTS
from schemas.online.history import history_order
from schemas.ranking import FIRST_ID_INDEX, Vocabulary
from schemas.recall import (
    Candidate,
    RecallLimits,
    category_centroids,
    covisit_items,
    covisit_totals,
    merge_routes,
    own_items,
    query_vector,
    recent_categories,
    recent_items,
    trend_items,
    user_routes,
)
from schemas.windows import HORIZON_MS, SEQUENCE_LIMIT, SLIDE_MS, TOP_ITEMS, WINDOW_MS

BEHAVIOR_NAMES = {code: name for name, code in BEHAVIOR_CODES.items()}
_WEIGHT_OF_CODE = {code: TREND_WEIGHTS[name] for name, code in BEHAVIOR_CODES.items()}  # type: ignore[index]
# The worker asks for twice the answers' length before popularity stops topping up.
ANSWER_K = 10
EXCLUDED_BEHAVIOR = "buy"
DEFAULT_LIMITS = RecallLimits()


@dataclass(frozen=True)
class ReplayedRequest:
    """One request as the worker would have seen it, and what the user did next."""

    user: int
    ts: int
    state: RequestState
    candidates: list[Candidate]
    model_input: CandidateInput
    truth: frozenset[int]
    next_item: int | None  # the user's next event's item (any time later), None if none
    touched: frozenset[int]  # every item the user touched up to the request
    excluded: frozenset[int]  # just bought: the answer leaves them out

    @property
    def categories(self) -> list[int]:
        return self.model_input.categories

    @property
    def new_truth(self) -> frozenset[int]:
        return self.truth - self.touched


@dataclass
class _UserState:
    fresh: deque[tuple[int, int, int, int]] = field(default_factory=deque)  # ts, item, cat, code
    history: dict[int, tuple[int, int]] = field(default_factory=dict)  # item -> (ts, count)
    touched: set[int] = field(default_factory=set)


class CategoryTrends:
    """Each category's top items over its latest closed window, as the feature job emits."""

    def __init__(self) -> None:
        self._times: dict[int, list[int]] = defaultdict(list)
        self._events: dict[int, list[tuple[int, int]]] = defaultdict(list)  # (item, weight)
        self._cache: dict[tuple[int, int], list[int]] = {}

    def add(self, category: int, ts: int, item: int, code: int) -> None:
        self._times[category].append(ts)
        self._events[category].append((item, _WEIGHT_OF_CODE[code]))

    def top(self, category: int, ts: int) -> list[int]:
        boundary = ts - ts % SLIDE_MS
        times = self._times.get(category)
        if not times:
            return []
        last = bisect.bisect_left(times, boundary) - 1
        if last < 0:
            return []
        newest = times[last]
        end = min(boundary, newest - newest % SLIDE_MS + WINDOW_MS)
        key = (category, end)
        if key not in self._cache:
            lo = bisect.bisect_left(times, end - WINDOW_MS)
            hi = bisect.bisect_left(times, end)
            scores: Counter[int] = Counter()
            for item, weight in self._events[category][lo:hi]:
                scores[item] += weight
            ranked = sorted(scores.items(), key=lambda pair: (-pair[1], -pair[0]))
            self._cache[key] = [item for item, _ in ranked[:TOP_ITEMS]]
        return self._cache[key]


class EmbeddingSearch:
    """The worker's exact inner-product search over the served item vectors (pure numpy)."""

    def __init__(
        self, vectors: F32, vocab: Vocabulary, item_category: npt.NDArray[np.int64]
    ) -> None:
        self.vectors = vectors
        self.vocab = vocab
        self.item_category = item_category
        self.centroids = category_centroids(vectors, item_category)

    def search(self, items: Sequence[int], categories: Sequence[int], k: int) -> list[int]:
        query = query_vector(
            self.vectors, self.vocab.item_index(list(items)), categories, self.centroids
        )
        if query is None or k < 1:
            return []
        sims = self.vectors[FIRST_ID_INDEX:] @ query
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.lexsort((top, -sims[top]))]
        return [int(i) for i in self.vocab.item_ids[top]]


class StoreReplay:
    """Replays ``events`` and yields a :class:`ReplayedRequest` after each chosen event."""

    def __init__(
        self,
        events: Events,
        search: EmbeddingSearch,
        popular: Sequence[int],
        limits: RecallLimits = DEFAULT_LIMITS,
    ) -> None:
        self.order = np.lexsort((events.item, events.user, events.ts))
        self.events = events
        self.search = search
        self.popular = list(popular[: limits.popular])
        self.limits = limits
        self.items = WindowCounter.build(events.item, events.ts, events.behavior)
        self.users = WindowCounter.build(events.user, events.ts, events.behavior)
        self.truth, self.next_item = _next_items(events, self.order)

    def run(self, is_request: npt.NDArray[np.bool_]) -> Iterator[ReplayedRequest]:
        """``is_request`` is aligned with ``events``; requests come in time order."""
        users: dict[int, _UserState] = defaultdict(_UserState)
        covisits: dict[int, Counter[int]] = defaultdict(Counter)
        trends = CategoryTrends()
        item_category: dict[int, int] = {}
        ev = self.events
        for n in self.order:
            user, item, category = int(ev.user[n]), int(ev.item[n]), int(ev.category[n])
            code, ts = int(ev.behavior[n]), int(ev.ts[n])
            state = users[user]
            fresh = state.fresh
            for other in dict.fromkeys(
                i for t, i, _, _ in reversed(fresh) if i != item and t > ts - WINDOW_MS
            ):
                covisits[item][other] += 1
                covisits[other][item] += 1
            fresh.append((ts, item, category, code))
            while fresh and fresh[0][0] <= ts - HORIZON_MS:
                fresh.popleft()
            while len(fresh) > SEQUENCE_LIMIT:
                fresh.popleft()
            last_ts, count = state.history.get(item, (ts, 0))
            state.history[item] = (max(last_ts, ts), count + 1)
            state.touched.add(item)
            item_category[item] = category
            if is_request[n]:
                yield self._request(user, ts, state, covisits, trends, item_category, n)
            trends.add(category, ts, item, code)

    def _request(
        self,
        user: int,
        ts: int,
        state: _UserState,
        covisits: dict[int, Counter[int]],
        trends: CategoryTrends,
        item_category: dict[int, int],
        n: int,
    ) -> ReplayedRequest:
        limits = self.limits
        items = [i for _, i, _, _ in state.fresh]
        categories = [c for _, _, c, _ in state.fresh]
        behaviors = [BEHAVIOR_NAMES[b] for _, _, _, b in state.fresh]
        excluded = frozenset(
            i for i, b in zip(items, behaviors, strict=True) if b == EXCLUDED_BEHAVIOR
        )
        history = history_order(state.history)
        clicks = recent_items(items, limits.covisit_clicks)
        neighbours = [_best(covisits[c], limits.covisit) for c in clicks if c in covisits]
        covisit = covisit_items(neighbours, limits.covisit, excluded)
        tops = [trends.top(c, ts) for c in recent_categories(categories)]
        recent = own_items(items, [h.item_id for h in history], limits.recent, excluded)
        routes = user_routes(
            None,
            self.search.search(items, categories, limits.embedding),
            trend_items(tops, limits.trend),
            self.popular,
            covisit=covisit,
            recent=recent,
        )
        candidates = merge_routes(routes, limits.max_candidates, min_count=2 * ANSWER_K)
        cand_ids = [c.item_id for c in candidates]
        counts = latest_window_counts(
            self.items, np.asarray(cand_ids, np.int64), np.full(len(cand_ids), ts, np.int64)
        )
        request_state = RequestState(
            now_ms=ts,
            items=items,
            categories=categories,
            behaviors=behaviors,
            event_ts=[t for t, _, _, _ in state.fresh],
            history=history,
            routes=routes,
            covisit_scores=covisit_totals(neighbours, excluded),
            candidate_limit=limits.max_candidates,
        )
        user_counts = latest_window_counts(
            self.users, np.asarray([user], np.int64), np.asarray([ts], np.int64)
        )
        model_input = candidate_input(
            request_state,
            cand_ids,
            self.search.item_category,
            [item_category.get(i, 0) for i in cand_ids],
            item_dense(counts),
            user_dense(user_counts)[0],
            self.search.vocab,
        )
        return ReplayedRequest(
            user=user,
            ts=ts,
            state=request_state,
            candidates=candidates,
            model_input=model_input,
            truth=self.truth[n],
            next_item=self.next_item[n],
            touched=frozenset(state.touched),
            excluded=excluded,
        )


def _best(neighbours: Counter[int], limit: int) -> list[tuple[int, float]]:
    """A co-visitation set's best members as Redis returns them: count, then id, descending."""
    ranked = sorted(neighbours.items(), key=lambda pair: (-pair[1], -pair[0]))[:limit]
    return [(item, float(count)) for item, count in ranked]


def _next_items(
    events: Events, order: npt.NDArray[np.intp]
) -> tuple[list[frozenset[int]], list[int | None]]:
    """For each event, the distinct items its user touched in ``(ts, ts + HORIZON_MS]``,
    and the item of the user's first later event."""
    by_user: dict[int, list[int]] = defaultdict(list)
    for n in order:
        by_user[int(events.user[n])].append(int(n))
    truth: list[frozenset[int]] = [frozenset()] * len(events)
    following: list[int | None] = [None] * len(events)
    for positions in by_user.values():
        times = [int(events.ts[n]) for n in positions]
        for at, n in enumerate(positions):
            later = bisect.bisect_right(times, times[at])
            end = bisect.bisect_right(times, times[at] + HORIZON_MS)
            truth[n] = frozenset(int(events.item[m]) for m in positions[later:end])
            if later < len(positions):
                following[n] = int(events.item[positions[later]])
    return truth, following
