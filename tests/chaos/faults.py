"""The faults a chaos pass injects into the running stack, each timed as a window.

Each fault acts on a service of the local stack through its pid file, the way an
operator or the kernel would: SIGTERM (clean shutdown), SIGKILL of the whole
process group (nothing flushed), SIGSTOP (alive, accepting connections, never
answering). Restarts go through ``Stack.up``, which returns once the service is
healthy: that moment ends the fault's window.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from jobs.localstack import Stack
from jobs.localstack.process import group_members, read_pidfile
from runtime.online.connect import OnlineClient
from schemas.codec import wall_clock_ms
from tests.chaos.ledger import FaultWindow


@dataclass(frozen=True)
class Fault:
    name: str
    service: str
    inject: Callable[[Stack], None]  # returns once the service is back
    kills: bool = False  # the service loses its memory (what it kept must be on disk)


def _pid(stack: Stack, service: str) -> int:
    pid = read_pidfile(stack.services[service].pidfile)
    if pid is None:
        raise RuntimeError(f"{service} is not running: no fault to inject")
    return pid


def _kill_group(stack: Stack, service: str) -> None:
    pid = _pid(stack, service)
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    # The stack spawned it from this process: reap it, or it lingers as a zombie.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def terminate_then_restart(service: str, outage_s: float) -> Fault:
    def inject(stack: Stack) -> None:
        stack.down([service])
        time.sleep(outage_s)
        stack.up([service])

    return Fault(f"{service} SIGTERM {outage_s:.0f}s", service, inject)


def kill_then_restart(service: str, outage_s: float) -> Fault:
    def inject(stack: Stack) -> None:
        _kill_group(stack, service)
        time.sleep(outage_s)
        stack.up([service])

    return Fault(f"{service} kill -9 {outage_s:.0f}s", service, inject, kills=True)


def stop_then_continue(service: str, stopped_s: float) -> Fault:
    def inject(stack: Stack) -> None:
        pid = _pid(stack, service)
        os.killpg(pid, signal.SIGSTOP)
        try:
            time.sleep(stopped_s)
        finally:
            os.killpg(pid, signal.SIGCONT)

    return Fault(f"{service} SIGSTOP {stopped_s:.0f}s", service, inject)


def run_fault(stack: Stack, fault: Fault) -> FaultWindow:
    started = wall_clock_ms()
    fault.inject(stack)
    return FaultWindow(fault.name, started, wall_clock_ms())


# The schedule: broker, Redis and Triton faults, in an order that leaves each part
# time to recover before the next one. The broker's kill outlasts the 30 s flush that
# once stopped the worker.
SCHEDULE: dict[str, Fault] = {
    "kafka-term": terminate_then_restart("kafka", 20),
    "redis-kill": kill_then_restart("redis", 5),
    "redis-stop": stop_then_continue("redis", 10),
    "triton-stop": stop_then_continue("triton", 15),
    "triton-kill": kill_then_restart("triton", 0),
    "kafka-kill": kill_then_restart("kafka", 45),
}


def schedule(names: str = ",".join(SCHEDULE)) -> list[Fault]:
    """The faults named (comma-separated, in the order given; empty: none)."""
    wanted = [name for name in names.split(",") if name]
    unknown = [name for name in wanted if name not in SCHEDULE]
    if unknown:
        raise ValueError(f"unknown faults {unknown}; known: {', '.join(SCHEDULE)}")
    return [SCHEDULE[name] for name in wanted]


@dataclass(frozen=True)
class StoreSnapshot:
    keys: set[bytes]
    out_of_stock: set[bytes]


def store_snapshot(client: OnlineClient, inventory: str) -> StoreSnapshot:
    """Every key of the online store, and the members of the out-of-stock set."""
    keys = set(client.scan_iter(count=5000))
    members: set[bytes] = client.smembers(inventory)  # type: ignore[assignment]
    return StoreSnapshot(keys, members)


def store_losses(before: StoreSnapshot, client: OnlineClient, inventory: str) -> list[str]:
    """Keys and out-of-stock marks present before a restart that are gone after it.

    Values may have moved on meanwhile (the writer keeps writing); only absence counts.
    """
    after = store_snapshot(client, inventory)
    lost = [k.decode(errors="replace") for k in before.keys - after.keys]
    lost += [f"out of stock: {m.decode()}" for m in before.out_of_stock - after.out_of_stock]
    return sorted(lost)
