"""Python signatures and docstrings for MCP tools, built from JSON Schema.

:class:`ToolSpec` reads a tool's ``inputSchema`` (and ``outputSchema``) and
gives its proxy function a real ``inspect.Signature`` (keyword-only
parameters, annotations from JSON types, ``Literal`` for enums) and a
docstring that lists every parameter with its type and description, nested
objects and ``$ref``/``$defs`` resolved. It also maps the Python keyword
arguments of a call back to the tool's original argument names.
"""

import inspect
import json
import typing

from mcp._naming import assign

__all__ = ["ToolSpec", "resolve", "annotation", "type_text"]

_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool,
          "array": list, "object": dict, "null": type(None)}
_TYPE_TEXT = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
              "array": "list", "object": "dict", "null": "None"}
_EMPTY = inspect.Parameter.empty
_MAX_DEPTH = 3


def _pointer(root, ref):
    """Follow a local JSON pointer like ``#/$defs/Address``."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    node = root
    for part in ref[1:].split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def resolve(schema, root):
    """Return ``schema`` with ``$ref`` followed (sibling keywords win)."""
    for _ in range(32):
        if not (isinstance(schema, dict) and "$ref" in schema):
            break
        target = _pointer(root, schema["$ref"])
        if not isinstance(target, dict):
            break
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **extra}
    return schema if isinstance(schema, dict) else {}


def _hashable_values(values):
    try:
        for v in values:
            hash(v)
        return True
    except TypeError:
        return False


def _union(members):
    unique = []
    for m in members:
        if m is _EMPTY:
            return _EMPTY
        if m not in unique:
            unique.append(m)
    if not unique:
        return _EMPTY
    return unique[0] if len(unique) == 1 else typing.Union[tuple(unique)]


def annotation(schema, root, depth=0):
    """The Python annotation for a JSON Schema (``inspect.Parameter.empty``
    when it cannot be said)."""
    s = resolve(schema, root)
    if depth > _MAX_DEPTH:
        return _EMPTY
    enum = s.get("enum")
    if isinstance(enum, list) and enum and _hashable_values(enum):
        return typing.Literal[tuple(enum)]
    if "const" in s and _hashable_values([s["const"]]):
        return typing.Literal[s["const"]]
    for key in ("anyOf", "oneOf"):
        if isinstance(s.get(key), list):
            return _union([annotation(m, root, depth + 1) for m in s[key]])
    if isinstance(s.get("allOf"), list) and len(s["allOf"]) == 1:
        return annotation(s["allOf"][0], root, depth + 1)
    kind = s.get("type")
    if isinstance(kind, list):
        return _union([annotation({**s, "type": k}, root, depth + 1) for k in kind])
    if kind == "array" and isinstance(s.get("items"), dict):
        inner = annotation(s["items"], root, depth + 1)
        return list if inner is _EMPTY else list[inner]
    if kind in _TYPES:
        return _TYPES[kind]
    if "properties" in s:
        return dict
    return _EMPTY


def type_text(schema, root, depth=0):
    """A short human-readable type, e.g. ``list[str]`` or ``"a" | "b"``."""
    s = resolve(schema, root)
    if depth > _MAX_DEPTH:
        return "any"
    enum = s.get("enum")
    if isinstance(enum, list) and enum:
        return " | ".join(json.dumps(v) for v in enum)
    if "const" in s:
        return json.dumps(s["const"])
    for key in ("anyOf", "oneOf"):
        if isinstance(s.get(key), list):
            return " | ".join(dict.fromkeys(type_text(m, root, depth + 1) for m in s[key]))
    if isinstance(s.get("allOf"), list) and len(s["allOf"]) == 1:
        return type_text(s["allOf"][0], root, depth + 1)
    kind = s.get("type")
    if isinstance(kind, list):
        return " | ".join(type_text({**s, "type": k}, root, depth + 1) for k in kind)
    if kind == "array":
        items = s.get("items")
        return f"list[{type_text(items, root, depth + 1)}]" if isinstance(items, dict) else "list"
    text = _TYPE_TEXT.get(kind) or ("dict" if "properties" in s else "any")
    if kind == "string" and s.get("format"):
        text += f" ({s['format']})"
    return text


def _object_of(schema, root):
    """The object schema with properties inside ``schema`` (itself, array
    items, or a single non-null anyOf member), or None."""
    s = resolve(schema, root)
    if isinstance(s.get("properties"), dict) and s["properties"]:
        return s
    if isinstance(s.get("items"), dict):
        return _object_of(s["items"], root)
    for key in ("anyOf", "oneOf"):
        members = [m for m in s.get(key) or () if resolve(m, root).get("type") != "null"]
        if len(members) == 1:
            return _object_of(members[0], root)
    return None


def _indent(text, prefix):
    return ("\n" + prefix).join(text.strip().splitlines())


def _field_lines(schema, root, indent, depth, lines, names=None):
    """Append one line per property of an object schema (nested objects
    indented below their property)."""
    s = resolve(schema, root)
    required = set(s.get("required") or ())
    for name, prop in (s.get("properties") or {}).items():
        p = resolve(prop, root)
        label = names.get(name, name) if names else name
        bits = [type_text(prop, root)]
        if label != name:
            bits.append(f"name {json.dumps(name)}")
        if name in required:
            bits.append("required")
        elif "default" in p:
            bits.append(f"default {json.dumps(p['default'])}")
        line = f"{indent}{label} ({', '.join(bits)})"
        if p.get("description"):
            line += ": " + _indent(p["description"], indent + "    ")
        lines.append(line)
        nested = _object_of(prop, root)
        if nested is not None:
            if depth < _MAX_DEPTH:
                _field_lines(nested, root, indent + "    ", depth + 1, lines)
            else:
                lines.append(f"{indent}    ...")


def _observed_lines(observed):
    """The ``Returns (observed from N calls):`` section for what the host
    saw the tool return (list_tools's ``observed``; see PROTOCOL.md), or no
    lines. The shape is the host's text, escaped there."""
    if not isinstance(observed, dict) or not isinstance(observed.get("shape"), str):
        return []
    calls = observed.get("calls") if isinstance(observed.get("calls"), int) else 0
    errors = observed.get("errors") if isinstance(observed.get("errors"), int) else 0
    head = f"Returns (observed from {calls} call{'' if calls == 1 else 's'}"
    if errors:
        head += f"; {errors} more raised ToolError"
    return ["", head + "):", "  " + observed["shape"],
            "  (seen so far, not declared by the tool; str(JSON ...) is text to json.loads)"]


class ToolSpec:
    """Signature, docstring and argument mapping of one tool."""

    def __init__(self, server_name, python_ref, tool, pyname):
        self.server = server_name
        self.tool = tool.get("name", "")
        self.pyname = pyname
        self.python_ref = python_ref          # e.g. "mcp_everything.echo"
        schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
        self._root = schema
        s = resolve(schema, schema)
        props = dict(s.get("properties") if isinstance(s.get("properties"), dict) else {})
        self.required = [n for n in s.get("required") or () if isinstance(n, str)]
        for name in self.required:  # required but not described: still a parameter
            props.setdefault(name, {})
        self.to_python = assign(props)                      # original -> python
        self.to_original = {py: orig for orig, py in self.to_python.items()}
        self.raw_name = "raw"
        while self.raw_name in self.to_original:
            self.raw_name += "_"
        extra = s.get("additionalProperties")
        self.strict = bool(props) and not extra if extra is not False else True
        self.signature = self._signature(props, tool.get("outputSchema"))
        self.doc = self._doc(tool, s)

    def _signature(self, props, output_schema):
        params = []
        for orig, py in self.to_python.items():
            prop = resolve(props[orig], self._root)
            default = _EMPTY
            if orig not in self.required:
                default = prop.get("default")
            params.append(inspect.Parameter(py, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=annotation(props[orig], self._root)))
        params.append(inspect.Parameter(self.raw_name, inspect.Parameter.KEYWORD_ONLY,
                                        default=False, annotation=bool))
        returns = _EMPTY
        if isinstance(output_schema, dict):
            returns = annotation(output_schema, output_schema)
        return inspect.Signature(params, return_annotation=returns)

    def _doc(self, tool, schema):
        lines = []
        description = (tool.get("description") or "").strip()
        lines.append(description or f"MCP tool {self.tool!r} of server {self.server!r}.")
        if self.to_python:
            lines += ["", "Parameters:"]
            _field_lines(schema, self._root, "  ", 0, lines, names=self.to_python)
        output = tool.get("outputSchema")
        if isinstance(output, dict):
            lines += ["", f"Returns {type_text(output, output)} (structuredContent):"]
            _field_lines(output, output, "  ", 0, lines)
        else:
            lines += _observed_lines(tool.get("observed"))
        example = ", ".join(f"{self.to_python[n]}=..." for n in self.required)
        lines += ["", "Call:",
                  f"  result = await {self.python_ref}({example})",
                  f"  result = {self.python_ref}.sync({example})   # blocking",
                  f"  {self.raw_name}=True returns the raw CallToolResult dict; "
                  "a tool error raises ToolError.",
                  f"Original name: {self.tool!r} on server {self.server!r}"
                  f" (call_tool({self.server!r}, {self.tool!r}, {{...}}))."]
        return "\n".join(lines)

    def prepare(self, kwargs):
        """Map call keywords to ``(arguments, raw)``; TypeError on a missing
        required or an unknown argument. ``None`` for an optional argument
        means "not given"."""
        raw = bool(kwargs.pop(self.raw_name, False))
        arguments = {}
        for key, value in kwargs.items():
            orig = self.to_original.get(key)
            if orig is None:
                if key in self.to_python or not self.strict:
                    orig = key  # the original name, e.g. via **{"user-id": 1}
                else:
                    known = ", ".join(self.to_original) or "none"
                    raise TypeError(
                        f"{self.python_ref}() got an unexpected keyword argument {key!r} "
                        f"(parameters: {known}); call_tool({self.server!r}, {self.tool!r}, "
                        "{...}) passes arguments the schema does not list")
            if value is None and orig not in self.required:
                continue
            arguments[orig] = value
        missing = [self.to_python[n] for n in self.required if n not in arguments]
        if missing:
            raise TypeError(f"{self.python_ref}() missing required keyword argument"
                            f"{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
        return arguments, raw
