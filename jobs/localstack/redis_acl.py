"""Redis ACL users of the secured stack: what each principal may run, and on which keys.

The pipeline keeps three kinds of keys, all tied to the Feast project (the
``schemas.views.PROJECT`` name unless a deployment picks another):

* Feast's entity hashes: ``<serialized entity key><project>`` (binary, the project last);
* co-visitation sets and the writer's replay guards: ``<project>:covisit:...``;
* the out-of-stock set: ``<project>:inventory:out_of_stock``.

``writer`` (the feature writer, and producers of the out-of-stock set) runs the
upsert, co-visitation and touch-history Lua scripts with EVALSHA, whose inner calls
Redis checks against the same user (HGET/HSET/EXPIRE, GET/SET, ZADD/ZINCRBY/ZREM/
ZREMRANGEBYRANK), marks stock with SADD/SREM in MULTI/EXEC, and reads what the worker
reads. ``reader``
(the worker, evaluation, the demo) gets read commands only, and writes nowhere but
its routing acknowledgements (``<project>:routing:<model>:acks``, one hash field per
worker, through a selector of its own). Both are confined to the project's keys;
``router`` (the canary) to the routing keys, which it sets and whose acknowledgements
it reads; ``admin`` may do anything (the stack itself, ``feast apply``).
The default user is off: every connection must say who it is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import redis

from schemas.views import PROJECT

# Read commands, minus those Redis marks dangerous (KEYS, DEBUG-like ones) and the
# admin ones; SCAN would list every key name whatever the key patterns say.
_READ = "+@connection +@read -@dangerous -@admin -scan"
# Exactly the writes the writer's scripts and the stock updates issue. A new command
# in a script fails with NOPERM in the integration test that runs the real writer.
_WRITE = (
    "+evalsha +eval +script|load +multi +exec +discard "
    "+hset +hget +expire +get +set +zadd +zincrby +zrem +zremrangebyrank +sadd +srem"
)

USER_RULES: Mapping[str, str] = {
    "admin": "~* &* +@all",
    "writer": f"{_READ} {_WRITE}",
    "reader": _READ,
    # The canary: the routing keys only, read, set and removed, and the workers'
    # acknowledgements of them read.
    "router": "+@connection +get +set +del +hgetall",
}
# What a worker runs on its acknowledgements hash, and nothing else it may write.
_ACK_WRITES = "+hset +hdel +pexpire"


# The users confined to the project's keys (the router has its routing keys alone).
GRANTED = ("writer", "reader")


def key_patterns(project: str = PROJECT) -> str:
    """The ACL key patterns of one Feast project's keys (see the module doc)."""
    return " ".join(f"~{glob}" for glob in project_key_globs(project))


def project_key_globs(project: str = PROJECT) -> tuple[str, str]:
    """The glob patterns (ACL, SCAN MATCH) that cover every key of one project."""
    escaped = _escaped(project)
    return f"{escaped}:*", f"*{escaped}"


def grant_project(admin: redis.Redis, project: str, users: tuple[str, ...] = GRANTED) -> None:
    """Let ``users`` reach a further project's keys too, with the commands they have.

    For a stack whose ACL file names one project while a run uses another (the demo
    gives every run its own). The grant lasts until the server restarts; an ACL user
    cannot lose one key pattern alone, so granted projects stay granted until then.
    """
    for user in users:
        # ACL SETUSER with key patterns alone adds them; the user's other rules stay.
        patterns = [f"~{glob}" for glob in project_key_globs(project)]
        if user == "reader":
            patterns.append(ack_selector(project))  # a selector is added beside the others
        admin.execute_command("ACL", "SETUSER", user, *patterns)  # type: ignore[no-untyped-call]


def routing_key_pattern(project: str = PROJECT) -> str:
    """The ACL key pattern of the project's routing keys (schemas/routing.py)."""
    return f"~{_escaped(project)}:routing:*"


def ack_selector(project: str = PROJECT) -> str:
    """The reader's selector: its routing acknowledgements written, nothing else."""
    return f"({routing_key_pattern(project)}:acks {_ACK_WRITES})"


def _escaped(project: str) -> str:
    # Glob metacharacters in a project name would widen the pattern; Feast names are
    # letters, digits and underscores, so escaping them is enough.
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in project)


def render_acl_file(passwords: Mapping[str, str], project: str = PROJECT) -> str:
    """An ACL file with one line per user; it holds only SHA-256 digests of the passwords."""
    lines = ["user default off resetpass resetkeys resetchannels -@all"]
    for user, rules in USER_RULES.items():
        digest = hashlib.sha256(passwords[user].encode()).hexdigest()
        if user == "admin":
            keys = ""
        elif user == "router":
            keys = f" resetchannels {routing_key_pattern(project)}"
        else:
            keys = f" resetchannels {key_patterns(project)}"
        extra = f" {ack_selector(project)}" if user == "reader" else ""
        lines.append(f"user {user} on #{digest}{keys} {rules}{extra}")
    return "\n".join(lines) + "\n"
