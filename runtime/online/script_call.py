"""One Lua call of the online-store writer: shared ground of the writer and its cluster path."""

from __future__ import annotations

from typing import Any, NamedTuple


class ScriptCall(NamedTuple):
    """One ``EVALSHA``: the script's text (loaded where missing), its keys and arguments.

    ``header``: how many leading ``argv`` are shared by all the keys, the rest being
    one segment per key in key order; on a cluster, calls of one script and header
    bound for one node are then sent as one (:mod:`runtime.online.node_batches`).
    None: the call is sent as it is.

    A NamedTuple: the writer makes one per slot on a cluster, thousands a batch, and a
    frozen dataclass took ten times as long to build.
    """

    script: str
    keys: list[bytes]
    argv: list[Any]
    header: int | None = None


class ScriptShas:
    """Each script's SHA1 as Redis gave it at SCRIPT LOAD, loaded once per client."""

    def __init__(self) -> None:
        self._shas: dict[str, str] = {}

    def sha(self, client: Any, script: str) -> str:
        """The script's SHA1, loading it through ``client`` the first time (on a
        cluster client, SCRIPT LOAD goes to every master)."""
        sha = self._shas.get(script)
        if sha is None:
            sha = self._shas[script] = str(client.script_load(script))
        return sha

    def clear(self) -> None:
        """Forget every SHA (Redis lost its scripts: a restart, SCRIPT FLUSH)."""
        self._shas.clear()
