"""The house rules of the `stepline` package, checked on its source.

- No two modules depend on each other, directly or around a loop, counting lazy (function-level)
  and `TYPE_CHECKING` imports: a split module whose halves import each other is one module.
- Every name is imported from the module that defines it. A module other than a package's
  `__init__` never passes on a name it imported (no re-export shim): its `__all__` lists only what
  it defines, nothing imports from it a name it only imported, and it has no `import x as x`.
  A package's `__init__` may gather its package's public API (`from stepline import Agent`): code
  outside the package, and other `__init__`s, may import from it; modules inside `stepline` import
  from the defining module instead.
- A section header comment (`# -- title ----`) heads a section: code follows it.
- The package's modules (and the Lambda handlers) stay under 400 lines.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.module_graph import (
    IMPORTERS,
    ROOT,
    Import,
    Module,
    attribute_uses,
    cycles,
    edges,
    imports_of,
    python_files,
    read_modules,
)

MODULES = read_modules()
MAX_LINES = 400


def test_cycles_are_found_around_any_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set[str]()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set[str](), "c": {"a", "b"}}) == []


def test_the_import_graph_has_no_cycles() -> None:
    found = cycles(edges(MODULES))
    assert not found, "modules that import each other (around a loop):\n" + "\n".join(" ↔ ".join(c) for c in found)


def _misplaced(imported: Import, importer: str | None, importer_is_package: bool) -> str | None:
    """Why importing `imported` is not from where the name is defined, or None when it is."""
    source = MODULES.get(imported.module)
    name = imported.name
    if source is None or name is None or name == "*" or f"{source.name}.{name}" in MODULES:
        return None
    if name in source.defined:
        return None
    if source.is_package and (importer is None or importer_is_package):
        return None  # a package's public API, used from outside `stepline` or gathered by an `__init__`
    where = "a package's `__init__` (import from the defining module inside stepline)" if source.is_package else ""
    return f"{imported.file.relative_to(ROOT)}:{imported.line}: {name} from {source.name} {where}".rstrip()


def _importer(path: Path) -> tuple[str | None, bool]:
    for module in MODULES.values():
        if module.path == path:
            return module.name, module.is_package
    return None, False


def test_every_name_is_imported_from_the_module_that_defines_it() -> None:
    problems: list[str] = []
    for folder in IMPORTERS:
        for path in python_files(ROOT / folder):
            importer, is_package = _importer(path)
            found = imports_of(path)
            problems += [p for i in found if (p := _misplaced(i, importer, is_package))]
            aliases = {i.alias: _module_of(i) for i in found if _module_of(i) in MODULES}
            for line, module, attribute in attribute_uses(path, aliases):
                use = Import(path, line, module, attribute, attribute)
                problems += [p for p in [_misplaced(use, importer, is_package)] if p]
    assert not problems, "names imported from a module that only imports them:\n" + "\n".join(sorted(set(problems)))


def _module_of(imported: Import) -> str:
    """The module an import binds (`import a.b as m`, `from a import b` where `b` is a module)."""
    if imported.name is None:
        return imported.module if imported.alias != imported.module.partition(".")[0] else imported.alias
    return f"{imported.module}.{imported.name}"


def _reexports(module: Module) -> list[str]:
    not_own = [n for n in module.exported if n not in module.defined and f"{module.name}.{n}" not in MODULES]
    return [f"__all__ lists {', '.join(not_own)}"] * bool(not_own) + [
        f"imports {n} as {n}" for n in module.redundant_aliases
    ]


def test_only_a_package_init_reexports_names() -> None:
    problems = {
        str(m.path.relative_to(ROOT)): found for m in MODULES.values() if not m.is_package and (found := _reexports(m))
    }
    assert not problems, "modules that pass on names they import:\n" + "\n".join(
        f"{k}: {v}" for k, v in problems.items()
    )


def test_a_package_init_exports_names_that_exist() -> None:
    problems = {m.name: [n for n in m.exported if n not in m.defined and not _bound(m, n)] for m in MODULES.values()}
    assert not {k: v for k, v in problems.items() if v}


def _bound(module: Module, name: str) -> bool:
    return f"{module.name}.{name}" in MODULES or any(i.alias == name for i in imports_of(module.path))


HEADER = re.compile(r"^(\s*)#\s*-{2,}\s*\S.*-{3,}\s*$")


def _empty_headers(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    problems: list[str] = []
    for number, line in enumerate(lines):
        header = HEADER.match(line)
        if header is None:
            continue
        after = next((rest for rest in lines[number + 1 :] if rest.strip()), None)
        indent = len(header.group(1))
        if after is None or HEADER.match(after) or len(after) - len(after.lstrip()) < indent:
            problems.append(f"{path.relative_to(ROOT)}:{number + 1}: {line.strip()[:60]}")
    return problems


def test_every_section_header_heads_some_code() -> None:
    problems = [p for folder in IMPORTERS for path in python_files(ROOT / folder) for p in _empty_headers(path)]
    assert not problems, "section headers with nothing under them:\n" + "\n".join(problems)


def test_modules_stay_under_the_size_limit() -> None:
    code = [path for folder in ("shared", "functions") for path in python_files(ROOT / folder)]
    sizes = {path: len(path.read_text().splitlines()) for path in code}
    large = {str(p.relative_to(ROOT)): n for p, n in sizes.items() if n > MAX_LINES}
    assert not large, f"modules over {MAX_LINES} lines (split them by job): {large}"
