"""TOON (Token-Oriented Object Notation) encoder, spec v3.3. Stdlib only.

Mirrors the Go package github.com/codebridge/codebridge/toon; both pass the
official encode fixtures in testdata/toon/encode.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["toon"]

_DELIMITERS = (",", "\t", "|")
_UNQUOTED_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NUMERIC_LIKE = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
# Characters that force quoting anywhere in a string (delimiter handled apart).
_SPECIAL = re.compile(r'[:"\\\[\]{}\x00-\x1f]')
_ESCAPE = re.compile(r'[\\"\x00-\x1f]')
_SURROGATE = re.compile("[\ud800-\udfff]")
# Unicode White_Space plus U+FEFF: leading/trailing ones force quoting.
_SPACES = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class _Num(str):
    """A canonical number token (already formatted)."""

    __slots__ = ()


def toon(obj: Any, *, indent: int = 2, delimiter: str = ",",
         key_folding: str = "off", flatten_depth: int | None = None) -> str:
    """Encode a JSON-like value as TOON text (compact, LLM-friendly).

    Dicts keep insertion order; arrays of uniform flat dicts become tables:
        toon({"users": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bob"}]})
        -> 'users[2]{id,name}:\\n  1,Ada\\n  2,Bob'

    indent: spaces per level (>= 1). delimiter: "," "\\t" or "|".
    key_folding: "off" or "safe" ({"a": {"b": 1}} -> "a.b: 1").
    flatten_depth: max keys folded into one dotted key (None = no limit).

    Accepts dict/Mapping, list/tuple, set (sorted if possible), str, int,
    float (NaN/inf -> null), Decimal, bool, None, datetime/date/time (ISO),
    bytes (base64), Enum (its value) and dataclasses. Other types raise
    TypeError; circular references raise ValueError.
    """
    if indent is None or isinstance(indent, bool) or not isinstance(indent, int) or indent < 1:
        raise ValueError(f"indent must be an int >= 1, got {indent!r}")
    if delimiter not in _DELIMITERS:
        raise ValueError(f"delimiter must be ',', '\\t' or '|', got {delimiter!r}")
    if key_folding not in ("off", "safe"):
        raise ValueError(f"key_folding must be 'off' or 'safe', got {key_folding!r}")
    if flatten_depth is None or flatten_depth == math.inf:
        flatten = math.inf
    elif isinstance(flatten_depth, int) and not isinstance(flatten_depth, bool) and flatten_depth >= 0:
        flatten = flatten_depth
    else:
        raise ValueError(f"flatten_depth must be an int >= 0 or None, got {flatten_depth!r}")
    value = _normalize(obj, set())
    enc = _Encoder(indent, delimiter, key_folding == "safe", flatten)
    return enc.encode(value)


# ---------------------------------------------------------------- numbers

def _format_decimal(neg: bool, digits: str, e10: int) -> str:
    """Lay out +-digits*10**e10 like JavaScript's Number#toString."""
    digits = digits.lstrip("0")
    if not digits:
        return "0"
    stripped = digits.rstrip("0")
    e10 += len(digits) - len(stripped)
    digits = stripped
    k = len(digits)
    n = e10 + k
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + ("e+" if n - 1 >= 0 else "e") + str(n - 1)
    return "-" + s if neg else s


def _float(x: float) -> Any:
    if math.isnan(x) or math.isinf(x):
        return None
    if x == 0:
        return _Num("0")
    r = repr(x)  # shortest round-trip digits
    neg = r.startswith("-")
    if neg:
        r = r[1:]
    mant, _, exp = r.partition("e")
    ip, _, fp = mant.partition(".")
    return _Num(_format_decimal(neg, ip + fp, int(exp or 0) - len(fp)))


def _decimal(x: decimal.Decimal) -> Any:
    if not x.is_finite():
        return None
    sign, digits, exp = x.as_tuple()
    return _Num(_format_decimal(bool(sign), "".join(map(str, digits)), exp))


# ---------------------------------------------------------- normalization

def _key(k: Any) -> str:
    if isinstance(k, str):
        return _valid(k)
    if k is None or isinstance(k, (bool, int, float, decimal.Decimal)):
        v = _normalize(k, set())
        return "null" if v is None else ("true" if v is True else "false" if v is False else str(v))
    if isinstance(k, enum.Enum):
        return _key(k.value)
    if isinstance(k, (datetime.date, datetime.time)):
        return k.isoformat()
    raise TypeError(f"toon: unsupported dict key type {type(k).__name__}")


def _valid(s: str) -> str:
    return _SURROGATE.sub("\ufffd", s) if _SURROGATE.search(s) else s


def _normalize(v: Any, seen: set) -> Any:
    if v is None or v is True or v is False:
        return v
    if isinstance(v, str):
        return _valid(v)
    if isinstance(v, int):
        return _Num(str(int(v)))
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, decimal.Decimal):
        return _decimal(v)
    if isinstance(v, enum.Enum):
        return _normalize(v.value, seen)
    if isinstance(v, (datetime.date, datetime.time)):  # datetime is a date
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        v = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
    if isinstance(v, (Mapping, list, tuple, set, frozenset)):
        if id(v) in seen:
            raise ValueError("toon: circular reference")
        seen.add(id(v))
        try:
            if isinstance(v, Mapping):
                out = {}
                for k, val in v.items():
                    out[_key(k)] = _normalize(val, seen)
                return out
            if isinstance(v, (set, frozenset)):
                try:
                    v = sorted(v)
                except TypeError:
                    v = list(v)
            return [_normalize(x, seen) for x in v]
        finally:
            seen.discard(id(v))
    raise TypeError(f"toon: unsupported type {type(v).__name__}")


# ---------------------------------------------------------------- encoder

def _is_primitive(v: Any) -> bool:
    return not isinstance(v, (dict, list))


def _quote(s: str) -> str:
    return '"' + _ESCAPE.sub(lambda m: _ESCAPES.get(m.group()) or "\\u%04x" % ord(m.group()), s) + '"'


def _encode_key(k: str) -> str:
    return k if _UNQUOTED_KEY.match(k) else _quote(k)


def _tabular_fields(arr: list) -> list | None:
    first = arr[0]
    if not isinstance(first, dict) or not first:
        return None
    keys = first.keys()
    for row in arr:
        if not isinstance(row, dict) or len(row) != len(first) or row.keys() != keys:
            return None
        for val in row.values():
            if not _is_primitive(val):
                return None
    return list(first)


class _Encoder:
    def __init__(self, indent: int, delim: str, fold: bool, flatten: float):
        self.unit = " " * indent
        self.delim = delim
        self.fold = fold
        self.flatten = flatten
        self.lines: list[str] = []
        self.item = False  # next line is the first line of a list-item object
        self.root_dotted: set[str] = set()

    def encode(self, v: Any) -> str:
        if isinstance(v, dict):
            if self.fold:
                self.root_dotted = {k for k in v if "." in k}
            self.object(v, 0, "", True, self.flatten)
        elif isinstance(v, list):
            self.array(None, v, 0)
        else:
            return self.primitive(v)
        return "\n".join(self.lines)

    def line(self, depth: int, content: str) -> None:
        if self.item:
            self.item = False
            self.lines.append(self.unit * (depth - 1) + "- " + content)
        else:
            self.lines.append(self.unit * depth + content)

    def primitive(self, v: Any) -> str:
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        if isinstance(v, _Num):
            return str(v)
        s = v
        if (not s or s in ("true", "false", "null") or s[0] == "-" or s[0] in _SPACES
                or s[-1] in _SPACES or self.delim in s or _SPECIAL.search(s)
                or _NUMERIC_LIKE.match(s)):
            return _quote(s)
        return s

    def object(self, o: dict, depth: int, path: str, anchored: bool, flatten: float) -> None:
        for k, v in o.items():
            self.field(k, v, o, depth, path, anchored, flatten)

    def field(self, key: str, val: Any, siblings: dict, depth: int, path: str,
              anchored: bool, flatten: float) -> None:
        if self.fold and isinstance(val, dict):
            folded = self.try_fold(key, val, siblings, path, anchored, flatten)
            if folded is not None:
                fkey, rest, n = folded
                if isinstance(rest, dict) and rest:
                    self.line(depth, _encode_key(fkey) + ":")
                    self.object(rest, depth + 1, _join(path, fkey), anchored, flatten - n)
                    return
                key, val = fkey, rest
        if isinstance(val, dict):
            self.line(depth, _encode_key(key) + ":")
            if val:
                self.object(val, depth + 1, _join(path, key), anchored, flatten)
        elif isinstance(val, list):
            self.array(key, val, depth)
        else:
            self.line(depth, _encode_key(key) + ": " + self.primitive(val))

    def try_fold(self, key: str, val: dict, siblings: dict, path: str,
                 anchored: bool, flatten: float):
        if flatten < 2 or len(val) != 1 or not _IDENTIFIER.match(key):
            return None
        segs = [key]
        cur: Any = val
        while len(segs) < flatten and isinstance(cur, dict) and len(cur) == 1:
            (k, cur), = cur.items()
            if not _IDENTIFIER.match(k):
                return None
            segs.append(k)
        folded = ".".join(segs)
        if folded in siblings or (anchored and _join(path, folded) in self.root_dotted):
            return None
        return folded, cur, len(segs)

    def header(self, n: int, fields: list | None = None) -> str:
        d = self.delim
        h = "[%d%s]" % (n, "" if d == "," else d)
        if fields is not None:
            h += "{" + d.join(_encode_key(f) for f in fields) + "}"
        return h + ":"

    def inline(self, arr: list) -> str:
        h = self.header(len(arr))
        if not arr:
            return h
        return h + " " + self.delim.join(self.primitive(v) for v in arr)

    def array(self, key: str | None, arr: list, depth: int) -> None:
        prefix = "" if key is None else _encode_key(key)
        if not arr:
            self.line(depth, prefix + ": []" if key is not None else "[]")
            return
        if all(_is_primitive(v) for v in arr):
            self.line(depth, prefix + self.inline(arr))
            return
        fields = _tabular_fields(arr)
        if fields is not None:
            self.line(depth, prefix + self.header(len(arr), fields))
            pad = self.unit * (depth + 1)
            d = self.delim
            for row in arr:
                self.lines.append(pad + d.join(self.primitive(row[f]) for f in fields))
            return
        self.line(depth, prefix + self.header(len(arr)))
        for it in arr:
            self.list_value(it, depth + 1)

    def list_value(self, v: Any, depth: int) -> None:
        if isinstance(v, dict):
            if not v:
                self.line(depth, "-")
                return
            # Fields at depth+1; the first is pulled up onto the hyphen line.
            self.item = True
            self.object(v, depth + 1, "", False, self.flatten)
        elif isinstance(v, list):
            if all(_is_primitive(x) for x in v):
                self.line(depth, "- " + self.inline(v))
                return
            self.line(depth, "- " + self.header(len(v)))  # no tabular form here
            for it in v:
                self.list_value(it, depth + 1)
        else:
            self.line(depth, "- " + self.primitive(v))


def _join(path: str, key: str) -> str:
    return key if not path else path + "." + key
