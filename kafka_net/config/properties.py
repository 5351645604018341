"""Java's ``.properties`` format (``parse_properties``) and ``load_config``:
a file, the --dev profile under it and ``--override key=value`` over it.
"""

from __future__ import annotations

import logging
import re
from typing import Iterable, Mapping

from kafka_net.config.broker_keys import canonical_key
from kafka_net.config.errors import ConfigError
from kafka_net.config.server_config import ServerConfig, is_known_key

log = logging.getLogger(__name__)

# --- the .properties format -----------------------------------------------------------
#
# java.util.Properties.load, in brief:
# * lines end at \n, \r or \r\n (and nowhere else: \f is whitespace, \x85 is text);
# * leading whitespace (space, \t, \f) is skipped; a line whose first character
#   is then # or ! is a comment; a blank line is nothing;
# * a line ending in an odd number of backslashes continues on the next line,
#   whose leading whitespace is skipped;
# * the key ends at the first unescaped '=', ':' or whitespace; whitespace, then
#   one '=' or ':', then whitespace, separate it from the value;
# * escapes: \t \n \r \f, \uXXXX, and a backslash before any other character
#   stands for that character (so "\=" and "\ " put '=' and ' ' in a key).

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``#``/``!`` comments, ``=``/``:``/space
    separators, backslash line continuation and escapes (``\\uXXXX`` included).

    Never raises: malformed escapes are read leniently.  A later key wins.
    """
    props: dict[str, str] = {}
    for line in _logical_lines(_LINE_BREAK.split(text)):
        key, value = _split_key_value(line)
        props[_unescape(key)] = _unescape(value)
    return props


def _logical_lines(lines: Iterable[str]) -> Iterable[str]:
    pending: str | None = None     # a line continued with a backslash
    for raw in lines:
        line = raw.lstrip(_WHITESPACE)
        if pending is None and (not line or line[0] in "#!"):
            continue
        # An odd number of trailing backslashes continues the line.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=:" or c in _WHITESPACE:
            break
        i += 1
    key, rest = line[:i], line[i:].lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt == "u" and _HEX4.fullmatch(s[i + 2:i + 6]):
                out.append(chr(int(s[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return _join_surrogates("".join(out))


def _join_surrogates(s: str) -> str:
    # Java strings are UTF-16, so a character outside the BMP is written as two
    # escapes (\uD83D\uDE00); join such pairs into one character.
    if not any("\ud800" <= c <= "\udfff" for c in s):
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


# --- KAFKA_* environment variables, as the apache/kafka image reads them -------------
#
# The image's entry point turns every KAFKA_* variable into a property: drop the
# prefix; a single "_" between two other characters becomes ".", then "___" becomes
# "-" and "__" becomes "_"; lower-case the result.  So KAFKA_NODE_ID is node.id and
# KAFKA_LISTENER_SECURITY_PROTOCOL_MAP is listener.security.protocol.map.  Variables
# that configure the JVM or log4j, not the broker, are left out, as the image's
# kafka-propertiesSpec.json leaves them out.

ENV_PREFIX = "KAFKA_"
ENV_EXCLUDED = frozenset({
    "KAFKA_VERSION", "KAFKA_HEAP_OPT", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS",
    "KAFKA_JMX_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS",
    "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS", "KAFKA_TOOLS_LOG4J_LOGLEVEL"})
# kafka-net's own tools read KAFKA_NET_* variables (KAFKA_NET_SHARED: bench/);
# no Kafka key starts with "net.", so none of them is the broker's.
OWN_PREFIX = "KAFKA_NET_"
_SINGLE_UNDERSCORE = re.compile(r"(?<=[^_])_(?=[^_])")


def env_key(variable: str) -> str:
    """The property a KAFKA_* variable sets (``KAFKA_NODE_ID`` -> ``node.id``)."""
    name = _SINGLE_UNDERSCORE.sub(".", variable[len(ENV_PREFIX):])
    return name.replace("___", "-").replace("__", "_").lower()


def env_settings(environ: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(variable, property, value) for the KAFKA_* variables of ``environ`` (the
    image's rules), and ``CLUSTER_ID`` (which the image passes to kafka-storage
    format) as cluster.id unless KAFKA_CLUSTER_ID is set."""
    found = [(name, env_key(name), value) for name, value in sorted(environ.items())
             if name.startswith(ENV_PREFIX) and len(name) > len(ENV_PREFIX)
             and name not in ENV_EXCLUDED and not name.startswith(OWN_PREFIX)]
    if "CLUSTER_ID" in environ and "KAFKA_CLUSTER_ID" not in environ:
        found.append(("CLUSTER_ID", "cluster.id", environ["CLUSTER_ID"]))
    return found


def env_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """{property: value} of :func:`env_settings`."""
    return {key: value for _, key, value in env_settings(environ)}


def load_config(path: str | None, overrides: Iterable[str] = (),
                base: Mapping[str, str] | None = None,
                environ: Mapping[str, str] | None = None) -> ServerConfig:
    """Read ``path`` (optional), then the KAFKA_* variables of ``environ``, then
    the ``key=value`` overrides, each over the one before.

    ``base`` (the --dev profile) lies under all three.  A later source replaces a
    key even when the two spell it differently (``broker.id`` / ``node.id``).
    A variable naming a key kafka-net does not know is reported and skipped
    (Kafka warns about unknown keys too); a file or override naming one is an
    error, since that is a typo in something the operator wrote for kafka-net.
    """
    props: dict[str, str] = {}
    if path is not None:
        try:
            with open(path, encoding="utf-8") as fh:
                props.update(parse_properties(fh.read()))
        except OSError as exc:
            raise ConfigError(
                f"cannot read config file {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"cannot read config file {path}: not UTF-8 ({exc.reason} "
                              f"at byte {exc.start})") from None
    for variable, key, value in env_settings(environ or {}):
        if is_known_key(key):
            _set(props, key, value)
        else:
            log.warning("Ignoring environment variable %s: '%s' is not a configuration "
                        "key kafka-net knows", variable, key)
    written = {canonical_key(k) for k in props}
    for key, value in (base or {}).items():
        if canonical_key(key) not in written:
            props[key] = value
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--override '{item}' is not of the form key=value")
        _set(props, key, value)
    return ServerConfig.from_properties(props)


def _set(props: dict[str, str], key: str, value: str) -> None:
    """Set ``key``, replacing it under any other spelling (broker.id / node.id)."""
    for existing in [k for k in props if canonical_key(k) == canonical_key(key)]:
        del props[existing]
    props[key] = value
