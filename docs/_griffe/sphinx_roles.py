"""A griffe extension for the API reference: Sphinx markup in docstrings as Markdown.

urlguard's docstrings name other objects with Sphinx roles
(``:class:`~urlguard.Target```) and introduce examples with reST's ``::``.
Markdown would show both as typed. Here a role that names a documented
urlguard object becomes a cross-reference (which ``mkdocs build --strict``
checks), any other role becomes inline code, and a paragraph's closing
``::`` becomes ``:``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):`(~?)([^`]+)`")
LITERAL_BLOCK = re.compile(r"(\S)::$", re.MULTILINE)


class SphinxRoles(griffe.Extension):
    """Rewrite the docstrings of every loaded object once the tree is complete."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = _markdown(obj.docstring.value, obj, pkg)


def _walk(obj: griffe.Object) -> list[griffe.Object]:
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            found += _walk(member)  # type: ignore[arg-type]
    return found


def _markdown(text: str, obj: griffe.Object, pkg: griffe.Module) -> str:
    def replace(match: re.Match[str]) -> str:
        short, name = match[1] == "~", match[2]
        shown = name.rsplit(".", 1)[-1] if short else name
        target = _public_path(name, obj, pkg)
        return f"[`{shown}`][{target}]" if target else f"`{shown}`"

    return LITERAL_BLOCK.sub(r"\1:", ROLE.sub(replace, text))


def _public_path(name: str, obj: griffe.Object, pkg: griffe.Module) -> str | None:
    """Where the API reference documents ``name``, seen from ``obj``; ``None``
    for a name it does not document under a public path."""
    try:
        path = name if name.startswith(pkg.name + ".") else obj.resolve(name)
    except (griffe.NameResolutionError, ValueError):
        return None
    parts = path.split(".")
    if any(part.startswith("_") for part in parts[1:-1]):
        # Defined in a private module: documented where the package exports it.
        exported = parts[-1]
        return f"{pkg.name}.{exported}" if exported in (pkg.exports or ()) else None
    return path
