"""The canary release: load a version beside the champion, raise its share step by step
while its figures hold, then promote it or give all traffic back to the champion.

1. The routing key first sends every user to the champion by version (requests that
   name no version go to the newest loaded one, which the canary often is), and every
   worker acknowledges it (:mod:`inference.serving.drain`); then every Triton endpoint
   loads the canary beside the champion (explicit versions in the config override) and
   a probe addressed to the canary must score plausibly.
2. For each step the routing key (:mod:`schemas.routing`) gives the canary that
   share of the users, listed first so its users stay in as it grows. After
   ``settle_s`` (the workers' routing poll) the figures are read every ``poll_s``
   for ``hold_s``; :func:`inference.serving.canary.judge` decides.
3. A breach (or the controller failing mid-way: figures unreadable, an interrupt):
   the routing gives the champion 100% at once (that instant is the
   rollback as users see it), then, once every worker has acknowledged that routing
   with no batch left on the canary, every endpoint unloads the canary and the routing
   key pins the champion alone (every answer then names its version and registry
   version). The registry version of the canary gets the tags
   ``canary.status=rolled_back`` and ``canary.reason``.
4. All steps held: once every worker has acknowledged the last step (the champion
   out of use), every endpoint serves the canary alone, config.pbtxt and the routing
   key pin it, and the registry alias (``champion``) moves to its version.

Fleet: the same steps run against each Triton endpoint given (one per replica); the
routing key is one per model, so every worker moves together. A Kubernetes rollout
of Triton itself is a separate path (the Deployment's rolling update); this command
drives versions inside the running servers.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from inference.serving import repository
from inference.serving.canary import Breach, Guards, VariantFigures, judge, summary
from inference.serving.canary_metrics import CanaryMetrics
from inference.serving.control import TritonControl, check_version
from inference.serving.drain import Drain, Drained, wait_drained
from inference.serving.errors import RolloutError, ServingError
from runtime.model_registry import RegistryClient, RegistryError
from runtime.online.connect import OnlineClient
from schemas.model_files import MANIFEST_FILE
from schemas.routing import Routing, RoutingAck, RoutingError, Variant, decode_ack, encode

log = logging.getLogger(__name__)
CANARY, CHAMPION = "canary", "champion"
CHAMPION_ALIAS = "champion"


@dataclass(frozen=True)
class Plan:
    steps: Sequence[float] = (1, 5, 25, 50, 100)
    hold_s: float = 60.0
    poll_s: float = 2.0
    # The workers re-read the routing every second by default: after a change, this
    # long before the figures count; before a version is unloaded, the wait for the
    # workers' acknowledgements (``drain``), or this long when none acknowledges.
    settle_s: float = 3.0
    guards: Guards = field(default_factory=Guards)
    drain_timeout_s: float = 30.0
    ack_stale_s: float = 10.0

    @property
    def drain(self) -> Drain:
        return Drain(self.drain_timeout_s, self.ack_stale_s, self.settle_s)


@dataclass
class Outcome:
    champion: int
    canary: int
    promoted: bool = False
    breach: Breach | None = None
    rollback_s: float | None = None  # breach seen → canary unloaded everywhere
    timeline: list[str] = field(default_factory=list)


class RoutingStore:
    """The routing key of one model in the online store's Redis, and the workers'
    acknowledgements beside it (``<key>:acks``, :func:`schemas.routing.ack_key`)."""

    def __init__(self, client: OnlineClient, key: str) -> None:
        self.client, self.key = client, key

    def put(self, routing: Routing) -> Routing:
        self.client.set(self.key, encode(routing))
        return routing

    def clear(self) -> None:
        self.client.delete(self.key)

    def acks(self) -> list[RoutingAck]:
        """Every worker's last acknowledgement; one that cannot be read is skipped (logged)."""
        raw: dict[bytes, bytes] = self.client.hgetall(f"{self.key}:acks")  # type: ignore[assignment]
        out = []
        for worker, value in raw.items():
            try:
                out.append(decode_ack(value))
            except RoutingError as error:
                log.warning("acknowledgement of %r unreadable: %s", worker, error)
        return out

    def retire(
        self,
        routing: Routing,
        retire: set[int],
        drain: Drain,
        allow_unversioned: bool = True,
    ) -> Drained:
        """Publish ``routing`` (which must not use ``retire``) and wait until every live
        worker has acknowledged it with no batch left on those versions."""
        self.put(routing)
        return wait_drained(self.acks, routing, retire, drain, allow_unversioned)


def registry_version(version_dir: Path) -> str:
    """``name/version`` of the registry version a published version came from, or ""."""
    try:
        record = json.loads((version_dir / MANIFEST_FILE).read_text()).get("registry") or {}
    except (OSError, ValueError):
        return ""
    return f"{record['name']}/{record['version']}" if "name" in record else ""


def pinned_routing(model_dir: Path, version: int, revision: int, reason: str) -> Routing:
    """Every user on ``version``, by name: answers then name its registry version too."""
    served = Variant(CHAMPION, version, 100.0, registry_version(model_dir / str(version)))
    return Routing(model_dir.name, [served], revision, int(time.time() * 1000), reason)


class Canary:
    def __init__(
        self,
        tritons: Sequence[TritonControl],
        model_dir: Path,
        store: RoutingStore,
        figures: Callable[[], dict[str, VariantFigures]],
        registry: RegistryClient | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        say: Callable[[str], None] = print,
        metrics: CanaryMetrics | None = None,
    ) -> None:
        self.tritons, self.model_dir, self.store = tritons, model_dir, store
        self.metrics = metrics or CanaryMetrics()
        self.figures, self.registry = figures, registry
        self.clock, self.sleep, self._say = clock, sleep, say
        self.model = model_dir.name
        self._began = clock()
        self._revision = 0

    def run(self, target: int, plan: Plan) -> Outcome:
        champion = self._champion()
        if target == champion:
            raise RolloutError(f"{self.model} already serves version {target}")
        outcome = Outcome(champion, target)
        self._outcome = outcome
        self._baseline = VariantFigures()
        self.metrics.started(self.model, champion, target)
        # Requests that name no version go to the newest loaded one: every worker must ask
        # for the champion by version before the canary (often newer) is loaded at all.
        drained = self.store.retire(
            self._routing(0.0, "canary loading: every user on the champion"),
            set(), plan.drain, allow_unversioned=False,
        )  # fmt: skip
        self.say(f"every user on {champion} by version: {drained.line()}")
        self._load([champion, target])
        try:
            for endpoint in self.tritons:
                limits = repository.read_limits(self.model_dir / str(target))
                check_version(endpoint, self.model, target, limits)
        except ServingError as error:
            self._load([champion])
            self.pin(champion, f"canary {target} failed its probe")
            raise RolloutError(
                f"canary {target} failed its probe; still {champion}: {error}"
            ) from error
        self.say(f"loaded {target} beside {champion} on {len(self.tritons)} endpoint(s)")
        try:
            for step in plan.steps:
                breach = self._hold(step, plan)
                if breach is not None:
                    self._roll_back(breach, plan)
                    return outcome
        except BaseException as error:
            # Figures that cannot be read (a worker gone), Redis, an interrupt: a canary
            # nobody watches does not keep its users.
            self._roll_back(Breach("controller", f"the canary stopped: {error!r}"), plan)
            raise
        self._promote(plan)
        return outcome

    def say(self, text: str) -> None:
        line = f"[{self.clock() - self._began:7.1f} s] {text}"
        self._outcome.timeline.append(line)
        self._say(line)

    def _champion(self) -> int:
        served = {tuple(t.ready_versions(self.model)) for t in self.tritons}
        if len(served) != 1:
            raise RolloutError(f"the endpoints serve different versions of {self.model}: {served}")
        (versions,) = served
        if not versions:
            raise RolloutError(f"{self.model} is not loaded; nothing to compare a canary with")
        return max(versions)

    def _load(self, versions: list[int]) -> None:
        config = repository.read_config(self.model_dir)
        for endpoint in self.tritons:
            endpoint.load(self.model, repository.with_versions(config, versions))

    def pin(self, version: int, reason: str) -> None:
        self._revision += 1
        self.store.put(pinned_routing(self.model_dir, version, self._revision, reason))

    def _route(self, canary_pct: float, reason: str) -> Routing:
        return self.store.put(self._routing(canary_pct, reason))

    def _routing(self, canary_pct: float, reason: str) -> Routing:
        """The next revision of the split: the canary at ``canary_pct``, listed first."""
        o = self._outcome
        variants = [
            Variant(CANARY, o.canary, canary_pct, registry_version(self.model_dir / str(o.canary))),
            Variant(
                CHAMPION,
                o.champion,
                100 - canary_pct,
                registry_version(self.model_dir / str(o.champion)),
            ),
        ]
        self._revision += 1
        self._last = Routing(self.model, variants, self._revision, int(time.time() * 1000), reason)
        return self._last

    def _hold(self, step: float, plan: Plan) -> Breach | None:
        self._route(step, f"canary step {step:g}%")
        self.metrics.stepped(self.model, self._outcome.champion, self._outcome.canary, step)
        self.say(f"canary {self._outcome.canary} at {step:g}% of users")
        self.sleep(plan.settle_s)
        base = self.figures()
        canary = champion = VariantFigures()
        end = self.clock() + plan.hold_s
        while self.clock() < end:
            self.sleep(min(plan.poll_s, max(0.0, end - self.clock())))
            now = self.figures()
            canary = now.get(CANARY, VariantFigures()) - base.get(CANARY, VariantFigures())
            champion = now.get(CHAMPION, VariantFigures()) - base.get(CHAMPION, VariantFigures())
            if champion.total >= plan.guards.min_answers:
                self._baseline = champion
            # At 100% (or a thin champion share) the champion answers too few to compare
            # with: its last window that had enough answers stands in.
            baseline = champion if champion.total >= plan.guards.min_answers else self._baseline
            if (breach := judge(canary, baseline, plan.guards)) is not None:
                self.say(f"breach at {step:g}%: {breach} (canary {summary(canary)})")
                return breach
        self.say(f"held {step:g}%: canary {summary(canary)}; champion {summary(champion)}")
        return None

    def _roll_back(self, breach: Breach, plan: Plan) -> None:
        seen = self.clock()
        o = self._outcome
        o.breach = breach
        self.metrics.breached(self.model, o.champion, o.canary, breach.check)
        back = self._routing(0.0, f"rolled back: {breach}")
        self.store.put(back)
        self.metrics.stepped(self.model, o.champion, o.canary, 0.0)
        self.say(f"all users back on {o.champion}")
        # Requests routed to the canary before the change (and batches still being scored
        # under it) finish first: unloading it now would fail them.
        drained = wait_drained(self.store.acks, back, {o.canary}, plan.drain)
        self.say(f"canary {o.canary} out of use: {drained.line()}")
        self._load([o.champion])
        repository.pin_versions(self.model_dir, [o.champion])
        self.pin(o.champion, f"rolled back {o.canary}: {breach}")
        o.rollback_s = self.clock() - seen
        self.say(f"unloaded {o.canary}; rolled back in {o.rollback_s:.1f} s")
        self._tag(o.canary, {"canary.status": "rolled_back", "canary.reason": str(breach)})

    def _promote(self, plan: Plan) -> None:
        o = self._outcome
        # The last step gave the canary every user; the champion goes once no worker asks
        # for it any more.
        drained = wait_drained(self.store.acks, self._last, {o.champion}, plan.drain)
        self.say(f"champion {o.champion} out of use: {drained.line()}")
        self._load([o.canary])
        repository.pin_versions(self.model_dir, [o.canary])
        self.pin(o.canary, f"promoted {o.canary} over {o.champion}")
        o.promoted = True
        self.say(f"promoted {o.canary}; {o.champion} unloaded")
        registered = registry_version(self.model_dir / str(o.canary))
        self._tag(o.canary, {"canary.status": "promoted"})
        if self.registry is not None and registered:
            name, version = registered.rsplit("/", 1)
            self.registry.set_alias(name, CHAMPION_ALIAS, version)
            self.say(f"registry: {name}@{CHAMPION_ALIAS} is now version {version}")

    def _tag(self, version: int, tags: dict[str, str]) -> None:
        registered = registry_version(self.model_dir / str(version))
        if self.registry is None or not registered:
            return
        name, number = registered.rsplit("/", 1)
        try:
            for key, value in tags.items():
                self.registry.set_model_version_tag(name, number, key, value[:5000])
        except RegistryError as error:  # the rollback itself stands; the record is extra
            log.warning("could not record the canary's outcome in the registry: %s", error)
