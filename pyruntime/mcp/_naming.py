"""Deterministic Python identifiers for server aliases, tool and parameter names.

Rules, applied to each name:

1. Unicode is decomposed (NFKD) and combining marks are dropped, so ``café``
   becomes ``cafe``; any other character that is not an ASCII letter, digit or
   underscore (dash, dot, space, CJK, emoji...) becomes ``_``. Case is kept.
2. A leading digit gets a ``_`` prefix (``2fa`` -> ``_2fa``); an empty name
   becomes ``_``.
3. A Python keyword gets a ``_`` suffix (``class`` -> ``class_``).
4. Within one namespace, names that collide after this are suffixed ``_2``,
   ``_3``... in their original order; the first one keeps the plain name.

The original name always stays usable through ``call_tool(server, name, args)``.
"""

import keyword
import unicodedata

__all__ = ["identifier", "assign", "is_dunder"]


def identifier(name):
    """Return the Python identifier for one name (rules 1-3, no collisions)."""
    name = str(name)
    if not name.isascii():
        name = "".join(c for c in unicodedata.normalize("NFKD", name)
                       if not unicodedata.combining(c))
    chars = [c if (c.isascii() and (c.isalnum() or c == "_")) else "_" for c in name]
    ident = "".join(chars) or "_"
    if ident[0].isdigit():
        ident = "_" + ident
    if keyword.iskeyword(ident):
        ident += "_"
    return ident


def assign(names, taken=()):
    """Map each name to a unique identifier, in order.

    ``names`` is an iterable of original names (duplicates map to the same
    identifier); ``taken`` holds identifiers that are already used. Returns a
    dict ``{original: identifier}`` in the original order.
    """
    used = set(taken)
    result = {}
    for name in names:
        if name in result:
            continue
        base = identifier(name)
        candidate, n = base, 2
        while candidate in used:
            candidate = f"{base}_{n}"
            n += 1
        used.add(candidate)
        result[name] = candidate
    return result


def is_dunder(name):
    """Whether ``name`` is a special name such as ``__doc__`` (as Python
    itself decides: ``___`` and ``____`` are ordinary names, and may be tools)."""
    return (len(name) > 4 and name[:2] == name[-2:] == "__"
            and name[2] != "_" and name[-3] != "_")
