"""Skills: functions saved from one session for every later one.

The host keeps each skill as a ``.py`` file and writes them all into every
new sandbox, at :data:`DIR`, before the first cell (see
pyruntime/PROTOCOL.md). In a cell::

    runtime.save_skill("top_issues", top_issues, "The N most commented issues")
    from skills import top_issues              # or: await skills.top_issues(...)
    runtime.list_skills(); runtime.delete_skill("top_issues")

A skill is imported on first use, as module ``skills.<name>``, with the
names every cell has (``runtime``, ``call_tool``, ``mcp_<server>``...), so
it may call MCP tools. One that fails to import raises ImportError in the
cell that imports it; the sandbox goes on.

``save_skill`` takes source text, or a function (or class) defined in an
earlier cell: its source comes from the cell history, with its decorators,
and with what it uses from the session (modules, other cell-defined
functions, constants) written before it, so that it also runs in a new
sandbox.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import linecache
import os
import sys
import types

from mcp import _channel
from mcp._results import MCPError

__all__ = ["DIR", "install", "save_skill", "list_skills", "delete_skill", "names"]

DIR = "/tmp/codebridge/skills"   # skills.SandboxDir on the host
_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

_namespace: dict = {}      # the cells' namespace (__main__)
_provided: frozenset = frozenset()  # the names the runtime puts there


class SkillError(MCPError, ValueError):
    """A skill could not be saved, found or loaded as asked."""


# ---- the skills package --------------------------------------------------

def names() -> list[str]:
    """The skills in this sandbox, by name."""
    try:
        return sorted(f[:-3] for f in os.listdir(DIR) if f.endswith(".py") and f[:-3].isidentifier())
    except OSError:
        return []


def _load(name: str):
    """Import skill ``name`` and return the object it defines under that name."""
    if name.startswith("_") or not name.isidentifier():
        raise AttributeError(f"module 'skills' has no attribute {name!r}")
    path = os.path.join(DIR, name + ".py")
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except FileNotFoundError:
        known = ", ".join(names()) or "none saved yet"
        raise AttributeError(f"there is no skill {name!r} (skills: {known}); save one with "
                             "runtime.save_skill(name, function)") from None
    module = types.ModuleType(f"skills.{name}")
    module.__file__ = path
    module.__dict__.update({k: _namespace[k] for k in _provided if k in _namespace})
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    try:
        exec(compile(source, path, "exec"), module.__dict__)
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise ImportError(f"skill {name!r} failed to import: {type(exc).__name__}: {exc} "
                          f"(fix it with runtime.save_skill({name!r}, ...) or remove it with "
                          f"runtime.delete_skill({name!r}))", name=f"skills.{name}") from exc
    if name not in module.__dict__:
        raise ImportError(f"skill {name!r} does not define {name!r}", name=f"skills.{name}")
    sys.modules[module.__name__] = module
    value = module.__dict__[name]
    setattr(sys.modules["skills"], name, value)
    return value


def _forget(name: str) -> None:
    package = sys.modules.get("skills")
    if package is not None:
        package.__dict__.pop(name, None)
    sys.modules.pop(f"skills.{name}", None)


def install(namespace: dict) -> types.ModuleType:
    """Make the ``skills`` package (imported lazily, one skill at a time)
    and bind it in ``namespace``, whose current names skills get too."""
    global _namespace, _provided
    package = types.ModuleType("skills", "Saved skills: `from skills import name` or `skills.name`; "
                                         "runtime.list_skills() lists them.")
    package.__path__ = []          # skills load through __getattr__, with the runtime's names
    package.__getattr__ = _load
    package.__dir__ = lambda: names()
    sys.modules["skills"] = package
    namespace["skills"] = package
    _namespace, _provided = namespace, frozenset(k for k in namespace if not k.startswith("__"))
    return package


# ---- source of a cell-defined function ------------------------------------

def _cells():
    """(filename, source) of the cells run so far, newest first."""
    found = []
    for filename, entry in list(linecache.cache.items()):
        if filename.startswith("<cell ") and len(entry) == 4:
            try:
                found.append((int(filename[6:-1]), filename, "".join(entry[2])))
            except ValueError:
                continue
    return [(f, s) for _, f, s in sorted(found, reverse=True)]


def _newest_def(name, cells):
    """The newest top-level ``def``/``class`` called ``name`` in ``cells``,
    as (source with decorators, ast node), or None."""
    for filename, source in cells:
        try:
            tree = compile(source, filename, "exec", _FLAGS)
        except SyntaxError:
            continue
        for node in reversed(tree.body):
            if isinstance(node, _DEFS) and node.name == name:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                lines = source.splitlines(True)[first - 1:node.end_lineno]
                return "".join(lines), node
    return None


def _bound_as(obj, alias):
    """The name a cell's top-level definition bound ``obj`` to, when it is
    ``alias`` (or its own name) in the session: a decorator that returns a
    wrapper leaves the wrapper under the definition's name."""
    for name in (alias, getattr(obj, "__name__", None)):
        if name and _namespace.get(name) is obj:
            return name
    return None


def _definition(obj, alias=None):
    """The newest top-level ``def``/``class`` of ``obj`` in the cell
    history, as (source with decorators, ast node): of its own name (or of
    the function a functools.wraps decorator wrapped), first in the cell it
    was compiled in; for a closure, such as the wrapper a decorator
    returned, or an object without a definition of its own, of the name it
    is bound to in the session."""
    target = obj
    while hasattr(target, "__wrapped__"):      # functools.wraps decorators
        target = target.__wrapped__
    if getattr(target, "__closure__", None):
        bound = _bound_as(obj, alias)
        found = _newest_def(bound, _cells()) if bound else None
        if found is None:
            raise SkillError(f"{obj.__name__!r} is a closure over local variables of another function: "
                             "define it at the top level of a cell, or pass its source text")
        return found
    code = getattr(target, "__code__", None)
    wanted = [n for n in (getattr(target, "__name__", None), getattr(obj, "__name__", None)) if n]
    cells = _cells()
    if code is not None:   # the cell it was compiled in first
        cells.sort(key=lambda c: c[0] != code.co_filename)
    for filename, source in cells:
        for name in wanted:
            found = _newest_def(name, [(filename, source)])
            if found is not None:
                return found
    bound = _bound_as(obj, alias)   # e.g. a decorator that returned an object
    found = _newest_def(bound, cells) if bound else None
    if found is not None:
        return found
    raise SkillError(f"the source of {getattr(obj, '__name__', obj)!r} is not in this session's cells "
                     "(it was defined elsewhere, or in a cell of a sandbox that restarted): "
                     "pass its source text instead")


def _used_names(node) -> list[str]:
    """Global names a definition reads (its decorators, defaults, body),
    in order of first use, minus those it binds itself."""
    bound = {node.name}
    used = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.arg):
            bound.add(sub.arg)
        elif isinstance(sub, ast.Name):
            if isinstance(sub.ctx, ast.Load):
                if sub.id not in used:
                    used.append(sub.id)
            else:
                bound.add(sub.id)
    return [n for n in used if n not in bound]


def _literal(value) -> str | None:
    """Source that rebuilds ``value``, when it is a plain literal."""
    try:
        text = repr(value)
        if len(text) <= 4096 and ast.literal_eval(text) == value:
            return text
    except Exception:
        pass
    return None


def _dependency(name: str, value, parts: list, seen: set) -> None:
    """Write into ``parts`` the source that binds ``name`` to ``value``."""
    if isinstance(value, types.ModuleType):
        real = value.__name__
        parts.append(f"import {real}\n" if real == name else f"import {real} as {name}\n")
        return
    module = getattr(value, "__module__", None)
    if isinstance(value, (type, types.FunctionType)) and module == "__main__":
        _collect(value, parts, seen, alias=name)
        return
    qualname = getattr(value, "__qualname__", "")
    if callable(value) and module and module != "__main__" and "<" not in qualname and "." not in qualname:
        parts.append(f"from {module} import {qualname}\n" if qualname == name
                     else f"from {module} import {qualname} as {name}\n")
        return
    text = _literal(value)
    if text is None:
        raise SkillError(f"the function uses {name!r}, a {type(value).__name__} that cannot be written "
                         "as source: make it a literal, build it inside the function, or pass the "
                         "source text instead")
    parts.append(f"{name} = {text}\n")


def _collect(obj, parts: list, seen: set, alias: str | None = None) -> None:
    """Append to ``parts`` the source of ``obj`` after its dependencies."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    source, node = _definition(obj, alias)
    for name in _used_names(node):
        if name in _provided or name not in _namespace or hasattr(builtins, name):
            continue
        _dependency(name, _namespace[name], parts, seen)
    parts.append(source if source.endswith("\n") else source + "\n")
    if alias and alias != node.name:
        parts.append(f"{alias} = {node.name}\n")


def source_of(obj, name: str) -> str:
    """Source text that defines ``name`` as ``obj`` in a fresh module."""
    parts: list = []
    _collect(obj, parts, set(), alias=name)
    return "".join(parts)


# ---- the helpers -----------------------------------------------------------

def _defines(tree, name: str) -> bool:
    for node in tree.body:
        if isinstance(node, _DEFS) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
    return False


def _check(name, source: str) -> None:
    try:
        tree = compile(source, f"<skill {name}>", "exec", ast.PyCF_ONLY_AST)
        compile(tree, f"<skill {name}>", "exec")
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        raise SkillError(f"skill {name!r} does not compile: {exc.msg}{where}") from None
    if not _defines(tree, name):
        raise SkillError(f"the source of skill {name!r} does not define {name!r} at the top level: "
                         f"name the function {name}, or pass the function object")


def save_skill(name, fn_or_source, description=None):
    """Save a skill every later sandbox gets: ``fn_or_source`` is a function
    or class defined in an earlier cell (its source comes from the cell
    history, with what it uses from the session), or source text that
    defines ``name``. The description defaults to the docstring. Returns
    ``{name, description, size, saved}``; later: ``from skills import name``.
    """
    if not isinstance(name, str):
        raise TypeError("save_skill(name, fn_or_source): name must be a str")
    if isinstance(fn_or_source, str):
        source = fn_or_source
    elif callable(fn_or_source):
        source = source_of(fn_or_source, name)
        if description is None:
            description = (getattr(fn_or_source, "__doc__", None) or "").strip()
    else:
        raise TypeError("save_skill(name, fn_or_source): pass a function, a class or source text, "
                        f"not a {type(fn_or_source).__name__}")
    if description is not None and not isinstance(description, str):
        raise TypeError("save_skill(): description must be a str")
    if name.isidentifier() and not keyword.iskeyword(name):
        _check(name, source)   # else the host says what a skill name must be
    info = _channel.get().call("save_skill", {"name": name, "source": source,
                                              "description": description or ""})
    try:
        os.makedirs(DIR, exist_ok=True)
        with open(os.path.join(DIR, name + ".py"), "w", encoding="utf-8") as f:
            f.write(source)
    except OSError as exc:
        raise SkillError(f"skill {name!r} was saved on the host but not written here ({exc}); "
                         "a new sandbox will have it") from None
    _forget(name)
    return info


def save_tool(name, fn_or_source, description=None):
    """The Python bridge's name for :func:`save_skill`."""
    return save_skill(name, fn_or_source, description)


def list_skills():
    """Every saved skill: ``[{name, description, size, saved, python}]``
    (``python`` is the name to use: ``skills.<name>``)."""
    listed = _channel.get().call("list_skills", {}) or []
    for entry in listed:
        if isinstance(entry, dict):
            entry["python"] = f"skills.{entry.get('name')}"
    return listed


def delete_skill(name):
    """Delete a saved skill, here and for every later sandbox."""
    info = _channel.get().call("delete_skill", {"name": str(name)})
    try:
        os.unlink(os.path.join(DIR, f"{name}.py"))
    except OSError:
        pass
    _forget(str(name))
    return info
