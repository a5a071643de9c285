"""Merging one-slot calls into calls per node (pure; the Lua runs in the cluster tests)."""

from runtime.online.node_batches import CROSS_SLOT_PRELUDE, merge
from runtime.online.script_call import ScriptCall


def call(
    key: str, *segment: object, script: str = "rows", header: tuple[int, ...] = (9, 2)
) -> ScriptCall:
    return ScriptCall(script, [key.encode()], [*header, *segment], header=len(header))


def test_calls_of_one_node_script_and_header_become_one_in_their_order() -> None:
    calls = [
        call("a", "a1", "a2"),
        call("b", "b1", "b2"),  # another node
        call("c", "c1", "c2"),
        call("d", "d1", "d2", header=(8, 2)),  # another TTL: another call
        call("e", "e1", script="pairs", header=(1,)),
        ScriptCall("whole", [b"f"], ["f1"]),  # says nothing of its layout: alone
    ]
    nodes = {0: "n1", 1: "n2", 2: "n1", 3: "n1", 4: "n1", 5: "n1"}
    merged, alone = merge(calls, nodes.__getitem__)
    assert alone == [5]
    shapes = [(m.node, m.parts, m.call.keys, m.call.argv) for m in merged]
    assert shapes == [
        ("n1", (0, 2), [], [2, b"a", b"c", 9, 2, "a1", "a2", "c1", "c2"]),
        ("n2", (1,), [], [1, b"b", 9, 2, "b1", "b2"]),
        ("n1", (3,), [], [1, b"d", 8, 2, "d1", "d2"]),
        ("n1", (4,), [], [1, b"e", 1, "e1"]),
    ]
    # Keys travel in ARGV (none declared), and the prelude puts them back in KEYS.
    assert all(m.call.script.startswith(CROSS_SLOT_PRELUDE) for m in merged)
    assert "allow-cross-slot-keys" in CROSS_SLOT_PRELUDE.splitlines()[0]


def test_merged_calls_hold_at_most_max_keys() -> None:
    calls = [call(f"k{n}", n) for n in range(7)]
    merged, _ = merge(calls, lambda _: "n1", max_keys=3)
    assert [m.parts for m in merged] == [(0, 1, 2), (3, 4, 5), (6,)]
    assert merge([], lambda _: "n1") == ([], [])
