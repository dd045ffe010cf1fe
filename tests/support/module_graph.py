"""The `stepline` package read as source: its modules, what each defines, and every import in the repository.

`tests/test_module_graph.py` checks the import graph with it (no cycles, every name imported from
the module that defines it). Everything is read with `ast`, nothing is imported, so a cycle that
would only fail at run time in some import order is found too.

An import is any `import`/`from … import` statement anywhere in a file: at module level, inside a
function (a lazy import), or under `if TYPE_CHECKING:`. A lazy or type-only import is still a
dependency of one module on another; two modules that need each other that way are one module in
two files, and the lazy import is how the cycle was hidden.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_ROOT = ROOT / "shared"
IMPORTERS = ("shared", "functions", "tests", "bench", "examples")
"""The folders whose Python files import `stepline` (the package itself, the Lambda handlers, the rest)."""


def _parse(path: Path) -> ast.Module:
    """`ast.parse`, again after CPython 3.11's spurious "AST constructor recursion depth mismatch".

    Python 3.11's AST constructor keeps its recursion depth in state that other threads of the
    process (a test's server threads) can disturb, and raises SystemError on a tree it could build
    (CPython gh-106905; seen in a full run). The same parse a moment later succeeds.
    """
    for _ in range(4):
        try:
            return ast.parse(path.read_text(), str(path))
        except SystemError as error:
            if "recursion depth mismatch" not in str(error):
                raise
    return ast.parse(path.read_text(), str(path))


@dataclass(frozen=True)
class Import:
    """One imported module, or one name from a module, at a line of a file."""

    file: Path
    line: int
    module: str
    name: str | None
    """The name taken from `module` (`from module import name`), or None for `import module`."""
    alias: str
    """What the import binds in the importing file."""


@dataclass
class Module:
    """A module of the `stepline` package: where it is, what it binds itself, what it imports."""

    name: str
    path: Path
    is_package: bool
    defined: set[str] = field(default_factory=set[str])
    """Names bound by a definition at module level (def, class, assignment), not by an import."""
    exported: list[str] = field(default_factory=list[str])
    """The names its `__all__` lists."""
    redundant_aliases: list[str] = field(default_factory=list[str])
    """Names imported as themselves (`from x import a as a`): the re-export spelling."""


def module_name(path: Path) -> tuple[str, bool]:
    """The dotted name of a file under `shared/` and whether it is a package's `__init__`."""
    parts = list(path.relative_to(PACKAGE_ROOT).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def python_files(folder: Path) -> Iterator[Path]:
    skipped = {"node_modules", ".venv", ".aws-sam", "dist", "build"}
    for path in sorted(folder.rglob("*.py")):
        if not skipped.intersection(path.relative_to(ROOT).parts):
            yield path


def read_modules() -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for path in python_files(PACKAGE_ROOT / "stepline"):
        name, is_package = module_name(path)
        module = Module(name, path, is_package)
        _read_bindings(module, _parse(path))
        modules[name] = module
    return modules


def _read_bindings(module: Module, tree: ast.Module) -> None:
    def bind(target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            module.defined.add(target.id)
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                bind(element)

    for node in _module_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            module.defined.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target)
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                module.exported = _strings(node.value)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
            bind(node.target)
        elif isinstance(node, ast.ImportFrom):
            module.redundant_aliases += [a.name for a in node.names if a.asname is not None and a.asname == a.name]


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at import time, with those inside module-level `if`/`try`/`with`."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.Try | ast.With | ast.For):
            yield from _module_level(node.body + node.orelse + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                yield from _module_level(handler.body)


def _strings(value: ast.expr) -> list[str]:
    if isinstance(value, ast.List | ast.Tuple):
        return [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def imports_of(path: Path) -> list[Import]:
    """Every import in a file (at any depth), with relative imports resolved inside `stepline`."""
    own, is_package = module_name(path) if path.is_relative_to(PACKAGE_ROOT) else ("", False)
    package = own if is_package else own.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Import):
            found += [Import(path, node.lineno, a.name, None, a.asname or a.name.partition(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level and not own:
                continue  # a test package's own relative import
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            found += [Import(path, node.lineno, module, a.name, a.asname or a.name) for a in node.names]
    return found


def attribute_uses(path: Path, module_aliases: dict[str, str]) -> Iterator[tuple[int, str, str]]:
    """`(line, module, attribute)` for each `alias.attribute` where `alias` names an imported module."""
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in module_aliases:
            yield node.lineno, module_aliases[node.value.id], node.attr


def edges(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Module → the `stepline` modules it imports (a package's `__init__` only when named itself)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, module in modules.items():
        for imported in imports_of(module.path):
            target = imported.module
            if imported.name is not None and f"{target}.{imported.name}" in modules:
                target = f"{target}.{imported.name}"
            if target in modules and target != name:
                graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            step = next(successors, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    if len(component) > 1:
                        found.append(sorted(component))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(sorted(graph[step]))))
            elif step in on_stack:
                low[node] = min(low[node], index[step])
    return found
