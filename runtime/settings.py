"""How every role reads its settings: ``STREAMREC_*`` variables first, flags over them.

A role declares one frozen dataclass deriving from :class:`Settings`, each field made
with :func:`setting` (its variable, help text, whether it is a secret), and checks it
in ``__post_init__``, raising the role's own error. Then:

* ``Cls.add_flags(parser)`` adds one flag per field; its help names the variable and
  the default, so ``--help`` lists every variable the role reads;
* ``Cls.load(environ, args, **defaults)`` reads the environment, lays the flags that
  were given over it, converts each value to the field's type (a bad value raises the
  role's error naming the variable or flag) and builds the object;
* ``settings.describe()`` is one loggable line with secrets masked by :func:`mask_url`
  and :func:`mask_properties`, the only masker.

The defaults more than one role shares (cache, model folder, Redis) live here too.
"""

from __future__ import annotations

import argparse
import os
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar, Union, get_args, get_origin, get_type_hints
from urllib.parse import unquote, urlsplit, urlunsplit

ENV_PREFIX = "STREAMREC_"
CACHE_DIR_ENV = ENV_PREFIX + "CACHE_DIR"
MODEL_DIR_ENV = ENV_PREFIX + "MODEL_DIR"
REDIS_URL_ENV = ENV_PREFIX + "REDIS_URL"
STACK_HOME_ENV = ENV_PREFIX + "STACK_HOME"

DEFAULT_CACHE_DIR = Path(".cache")
DEFAULT_MODEL_DIR = DEFAULT_CACHE_DIR / "ranker"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_STACK_HOME = Path(".stack")

# Property names holding credentials: librdkafka's sasl.password, sasl.oauthbearer.config,
# ssl.key.pem, ssl.keystore.password; Java's sasl.jaas.config, ssl.keystore.key,
# ssl.truststore.password; a schema registry's basic.auth.user.info (user:password).
SECRET_MARKERS = (
    "password",
    "secret",
    "key",
    "token",
    "jaas",
    "oauthbearer",
    "credential",
    "user.info",
    "private",
)
MASK = "***"
T = TypeVar("T")


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where downloads and builds are cached (``$STREAMREC_CACHE_DIR``, default ``.cache``)."""
    return Path(_env(environ).get(CACHE_DIR_ENV) or DEFAULT_CACHE_DIR)


def model_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The trained ranker's folder (``$STREAMREC_MODEL_DIR``, default ``.cache/ranker``)."""
    return Path(_env(environ).get(MODEL_DIR_ENV) or DEFAULT_MODEL_DIR)


def redis_url(environ: Mapping[str, str] | None = None) -> str:
    """The Redis behind the Feast online store (``$STREAMREC_REDIS_URL``)."""
    return _env(environ).get(REDIS_URL_ENV) or DEFAULT_REDIS_URL


def stack_home(environ: Mapping[str, str] | None = None) -> Path:
    """The local stack's data, pids, logs and Triton models (``$STREAMREC_STACK_HOME``)."""
    return Path(_env(environ).get(STACK_HOME_ENV) or DEFAULT_STACK_HOME)


class SettingsError(ValueError):
    """A setting that cannot be read or is out of range (roles may raise their own)."""


# --- secrets -------------------------------------------------------------------------


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # not a URL we can take apart: show nothing of it
        return MASK
    netloc = f"{parts.username or ''}:{MASK}@{parts.hostname or ''}{port}"
    return urlunsplit(parts._replace(netloc=netloc))


def is_secret_name(name: str) -> bool:
    """Whether a property called ``name`` holds a credential (see :data:`SECRET_MARKERS`)."""
    return any(marker in name.lower() for marker in SECRET_MARKERS)


def mask_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """``name=value`` properties with the values of credential-like names masked."""
    return {name: MASK if is_secret_name(name) else value for name, value in properties.items()}


class PropertiesFormatError(ValueError):
    """A malformed ``name=value,...`` text; the message names positions, never the text.

    Any entry may hold a password, so not even the part that looks like a name is
    quoted: the reader learns which entry to fix, a log learns nothing of its value.
    """


def split_escaped(text: str) -> list[str]:
    """``text`` cut at unescaped commas, ``\\,`` read as a comma and ``\\\\`` as a backslash.

    Any other backslash stays as it is (paths, JAAS escapes pass unchanged).
    """
    parts: list[str] = []
    current: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == ",":
            parts.append("".join(current))
            current = []
        elif char == "\\":
            following = next(chars, None)
            if following is None:
                raise PropertiesFormatError(f"entry {len(parts) + 1} ends with a lone backslash")
            current.append(following if following in ",\\" else char + following)
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def parse_properties(text: str) -> dict[str, str]:
    """``a=1,b=2`` to ``{"a": "1", "b": "2"}``; ``\\,`` is a comma inside a value.

    Refuses entries without ``=`` or without a name, naming the entry by position.
    """
    properties: dict[str, str] = {}
    for position, entry in enumerate((part.strip() for part in split_escaped(text)), start=1):
        if not entry:
            continue
        name, sep, value = entry.partition("=")
        if not sep or not name.strip():
            raise PropertiesFormatError(f"entry {position} is not of the form name=value")
        properties[name.strip()] = value.strip()
    return properties


def secret_texts(value: Any) -> set[str]:
    """The texts of a secret setting's ``value`` that :func:`_masked` hides.

    What a log must never show: the credential-like properties' values, a URL's
    password (as written and percent-decoded), or the whole value of anything else.
    """
    if isinstance(value, Mapping):
        return {str(text) for name, text in value.items() if is_secret_name(name) and text}
    if isinstance(value, str) and "://" in value:
        try:
            password = urlsplit(value).password
        except ValueError:  # unparsable: the masker shows none of it, so hide all of it
            return {value}
        return {password, unquote(password)} if password else set()
    return {str(value)} if value else set()


def _masked(value: Any) -> Any:
    if isinstance(value, Mapping):
        return mask_properties(value)
    if isinstance(value, str) and "://" in value:
        return mask_url(value)
    return MASK if value else value


# --- declaring fields ----------------------------------------------------------------

_SPEC = "streamrec.setting"
_GROUP = "streamrec.group"


@dataclass(frozen=True)
class Spec:
    """What :func:`setting` records about a field."""

    env: str
    help: str
    flag: str
    secret: bool = False
    parse: Callable[[str], Any] | None = None
    # True: an empty value is a value ("" = off); else empty means "not set".
    empty: bool = False
    # The default as --help shows it, when the dataclass default is not the whole story.
    shown: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


def setting(
    default: Any = MISSING,
    *,
    env: str,
    help: str,
    flag: str | None = None,
    secret: bool = False,
    parse: Callable[[str], Any] | None = None,
    empty: bool = False,
    shown: str | None = None,
    default_factory: Any = MISSING,
) -> Any:
    """A field read from ``env`` and from ``flag`` (default: ``--<field-name>``).

    ``parse`` replaces the conversion the field's type implies.
    """
    # The flag is named from the field later (the field's name is not known here).
    spec = Spec(env, help, flag or "", secret, parse, empty, shown)
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata={_SPEC: spec})
    return field(default=default, metadata={_SPEC: spec})


def redis_url_setting() -> Any:
    """The Feast online store's Redis, one variable for every role (its password is masked)."""
    return setting(
        DEFAULT_REDIS_URL,
        env=REDIS_URL_ENV,
        help="Redis of the Feast online store (redis+cluster://h:p,... for a cluster)",
        secret=True,
    )


def group(factory: Callable[[], Any]) -> Any:
    """A nested settings object read the same way, e.g. ``kafka: KafkaSettings = group(...)``."""
    return field(default_factory=factory, metadata={_GROUP: True})


def _spec(item: Field[Any]) -> Spec | None:
    spec: Spec | None = item.metadata.get(_SPEC)
    if spec is not None and not spec.flag:
        spec = replace(spec, flag="--" + item.name.replace("_", "-"))
    return spec


def _walk(cls: type) -> Iterable[tuple[Field[Any], Any, Spec | None]]:
    """Each field with its resolved type; groups come with no spec."""
    hints = get_type_hints(cls)
    for item in fields(cls):
        yield item, hints[item.name], _spec(item)


# --- converting ----------------------------------------------------------------------

_NOUNS: dict[Any, str] = {int: "an integer", float: "a number", bool: "true or false"}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _bool(text: str) -> bool:
    if text.lower() in _TRUE + _FALSE:
        return text.lower() in _TRUE
    raise ValueError(f"not one of {', '.join(_TRUE + _FALSE)}")


def _reader(kind: Any) -> Callable[[str], Any]:
    """How to turn text into a value of ``kind``."""
    origin, args = get_origin(kind), get_args(kind)
    if origin in (Union, types.UnionType):  # X | None: an unset value is None
        (inner,) = [arg for arg in args if arg is not type(None)]
        return _reader(inner)
    if origin is tuple:  # comma-separated
        item = _reader(args[0])
        return lambda text: tuple(item(part.strip()) for part in text.split(",") if part.strip())
    if origin in (Mapping, dict) or kind is dict:
        return parse_properties
    if kind is bool:
        return _bool
    if kind in (int, float, str, Path):
        reader: Callable[[str], Any] = kind
        return reader
    raise TypeError(f"no reader for settings of type {kind}")


def _convert(text: str, kind: Any, spec: Spec, source: str, error: type[Exception]) -> Any:
    read = spec.parse or _reader(kind)
    try:
        return read(text)
    except ValueError as exc:
        noun = _NOUNS.get(kind) if read in (int, float, _bool) else None
        reason = f"is not {noun}" if noun else f"is refused: {exc}"
        # A secret's text (and the parser's words about it) stays out of logs; the
        # properties parser's words name positions only, so they may be shown.
        if not spec.secret:
            shown = f"{source}={text!r} {reason}"
        elif isinstance(exc, PropertiesFormatError):
            shown = f"{source} is unreadable: {exc}"
        else:
            shown = f"{source} is unreadable"
        raise error(shown) from None


def _load(
    cls: type[T],
    env: Mapping[str, str],
    given: Mapping[str, Any],
    defaults: Mapping[str, Any],
    error: type[Exception],
) -> T:
    values = dict(defaults)
    for item, kind, spec in _walk(cls):
        if item.metadata.get(_GROUP):  # read the same way; a bad value raises the role's error
            values[item.name] = _load(kind, env, given, {}, error)
            continue
        if spec is None:
            continue
        raw = env.get(spec.env)
        if raw is not None and (raw.strip() or spec.empty):
            values[item.name] = _convert(raw.strip(), kind, spec, spec.env, error)
        flagged = given.get(spec.dest)
        if isinstance(flagged, str) and (flagged.strip() or spec.empty):
            values[item.name] = _convert(flagged.strip(), kind, spec, spec.flag, error)
        elif flagged is not None and not isinstance(flagged, str):  # on/off flags
            values[item.name] = flagged
    return cls(**values)


# --- the role's settings class -------------------------------------------------------


class Settings:
    """Base of a role's frozen settings dataclass: one way to read, flag and describe it."""

    # What a value that cannot be read raises; __post_init__ should raise the same.
    error: ClassVar[type[Exception]] = SettingsError

    @classmethod
    def load(
        cls,
        environ: Mapping[str, str] | None = None,
        args: argparse.Namespace | None = None,
        **defaults: Any,
    ) -> Self:
        """The environment, then the flags given in ``args`` over it.

        ``defaults`` are values computed at run time (e.g. from another variable),
        used where neither the environment nor a flag sets the field.
        """
        return _load(
            cls, _env(environ), vars(args) if args is not None else {}, defaults, cls.error
        )

    @classmethod
    def add_flags(cls, parser: argparse.ArgumentParser, skip: Iterable[str] = ()) -> None:
        """One flag per field (groups included); help names the variable and the default."""
        for item, kind, spec in _walk(cls):
            if item.metadata.get(_GROUP):
                kind.add_flags(parser, skip)
            if spec is None or item.name in skip:
                continue
            # argparse formats help with %: a literal one must be doubled.
            text = f"{spec.help} [{spec.env}, default {_shown_default(item, spec)}]"
            options: dict[str, Any] = {"dest": spec.dest, "default": None}
            if kind is bool:
                options["action"] = argparse.BooleanOptionalAction
            parser.add_argument(spec.flag, help=text.replace("%", "%%"), **options)

    @classmethod
    def variable(cls, name: str) -> str:
        """The environment variable of field ``name`` (for messages that say what to fix)."""
        return variables(cls)[name]

    def describe(self) -> str:
        """One loggable line, secrets masked."""
        shown = []
        for item, _kind, spec in _walk(type(self)):
            value = getattr(self, item.name)
            if isinstance(value, Settings):
                shown.append(f"{item.name}: {value.describe()} |")
                continue
            if spec is not None and spec.secret:
                value = _masked(value)
            shown.append(f"{item.name}={_text(value)}")
        return " ".join(shown)

    def secrets(self) -> set[str]:
        """Every secret text this object holds (groups included): what describe() masks."""
        found: set[str] = set()
        for item, _kind, spec in _walk(type(self)):
            value = getattr(self, item.name)
            if isinstance(value, Settings):
                found |= value.secrets()
            elif spec is not None and spec.secret:
                found |= secret_texts(value)
        return found


def variables(cls: type) -> dict[str, str]:
    """Field name (``group.field`` inside groups) to its variable, every one ``cls`` reads."""
    found: dict[str, str] = {}
    for item, kind, spec in _walk(cls):
        if item.metadata.get(_GROUP):
            found.update({f"{item.name}.{k}": v for k, v in variables(kind).items()})
        elif spec is not None:
            found[item.name] = spec.env
    return found


def variables_help(*classes: type) -> str:
    """Every variable of ``classes`` with its default, for a parser's epilog."""
    lines = ["environment variables (flags win over them):"]
    for cls in classes:
        for item, kind, spec in _walk(cls):
            if item.metadata.get(_GROUP):
                lines += variables_help(kind).splitlines()[1:]
            elif spec is not None:
                lines.append(f"  {spec.env:<40} {spec.help} (default {_shown_default(item, spec)})")
    return "\n".join(dict.fromkeys(lines))  # a group shared by two classes is listed once


def _shown_default(item: Field[Any], spec: Spec) -> str:
    if spec.shown is not None:
        return spec.shown
    if item.default_factory is not MISSING:
        value = item.default_factory()
    else:
        value = None if item.default is MISSING else item.default
    return _text(_masked(value) if spec.secret else value) or "''"


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(str(part) for part in value)
    if isinstance(value, Mapping):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "none"
    return "none" if value is None else str(value)
