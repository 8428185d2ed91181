"""The package's layers hold: import-linter's contracts, no cycles, imports at the top.

Issue 21: the layers of docs/design.md §1 are declared in ``[tool.importlinter]`` of
pyproject.toml and checked by ``lint-imports`` (``.ci/run``); the tests here prove the
contracts can fail, look for import cycles with grimp (the library import-linter
builds its graph with), and count the imports inside functions against an
allow-list. The core knows the Strategy contract, never a strategy (ARC-003).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "turnpress"
LINT_IMPORTS = shutil.which("lint-imports", path=os.pathsep.join(
    [str(Path(sys.executable).parent), os.environ.get("PATH", "")]))

#: The only imports inside functions: (file, imported module) -> why it is there.
#: Each such line also carries a one-line comment saying which kind it is.
FUNCTION_LEVEL_IMPORTS: dict[tuple[str, str], str] = {
    # optional dependency: the [langchain] extra, imported only when the adapter is used
    ("turnpress/integrations/langchain.py", "langchain_core"): "optional extra",
    ("turnpress/integrations/langchain.py", "langchain_core.utils.function_calling"):
        "optional extra",
    # optional dependency: the [dask] extra, imported when the dask executor starts
    ("turnpress/plugins/dask_executor.py", "distributed"): "optional extra",
    ("turnpress/plugins/dask_executor.py", "dask"): "optional extra (its config)",
    # a dependency whose import takes about a second: loaded on the first exact count,
    # so a render that counts no tokens never pays for it
    ("turnpress/plugins/tokenizers.py", "bpe_openai"): "heavy dependency",
    # CLI lazy loading: rich is imported only by the commands that print a table
    ("turnpress/cli.py", "turnpress.console"): "CLI lazy loading",
}

#: core/ files allowed over 500 lines; each must be named, with its reason, in
#: docs/design.md §1 (none is, today)
LONG_CORE_FILES: set[str] = set()


def function_level_imports(root: Path) -> dict[tuple[str, str], list[int]]:
    """(file relative to the repository, imported module) -> line numbers, for every
    ``import`` inside a function of a module under ``root``."""
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(root.parent).as_posix()
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom):
                    names = ["." * node.level + (node.module or "")]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                else:
                    continue
                for name in names:
                    lines = found.setdefault((rel, name), [])
                    if node.lineno not in lines:
                        lines.append(node.lineno)
    return found


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components of more than
    one module (and modules importing themselves), each sorted (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = 0
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            module, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(
                        graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on_stack:
                    low[module] = min(low[module], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1 or graph.direct_import_exists(
                            importer=module, imported=module):
                        cycles.append(sorted(component))
    return cycles


def _graph(edges: Mapping[str, Iterable[str]]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in edges.items():
        graph.add_module(importer)
        for other in imported:
            graph.add_module(other)
            graph.add_import(importer=importer, imported=other)
    return graph


def _copy_package(dest: Path) -> Path:
    """The package's Python files and pyproject.toml under ``dest`` (no data files)."""
    shutil.copytree(PACKAGE, dest / "turnpress",
                    ignore=lambda d, names: [n for n in names if n == "__pycache__" or (
                        not n.endswith(".py") and not (Path(d) / n).is_dir())])
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS is not None, "lint-imports is missing: pip install -e '.[test]'"
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([LINT_IMPORTS, "pyproject.toml", "--no-cache"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_lint_imports_keeps_the_contracts_and_breaks_on_a_module_that_imports_upward(
        tmp_path: Path) -> None:
    copy = _copy_package(tmp_path)
    kept = _lint_imports(copy)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "4 kept, 0 broken" in kept.stdout
    # a core module that imports the CLI breaks both the layers and the core's contract
    (copy / "turnpress" / "core" / "_breaks_a_layer.py").write_text(
        '"""A core module importing the CLI, against the layers."""\n\n'
        "import turnpress.cli  # noqa: F401\n")
    broken = _lint_imports(copy)
    assert broken.returncode != 0
    assert "turnpress layers (docs/design.md §1) BROKEN" in broken.stdout
    assert "the core imports no strategy, command or front end BROKEN" in broken.stdout
    assert "turnpress.core._breaks_a_layer -> turnpress.cli" in broken.stdout
    # and a core module no layer names is reported: each has its place in the core
    assert "the core's own layers (docs/design.md §1) BROKEN" in broken.stdout
    assert "- turnpress.core._breaks_a_layer\n" in broken.stdout


def test_the_core_layers_break_on_an_upward_import_inside_the_core(tmp_path: Path) -> None:
    copy = _copy_package(tmp_path)
    registry = copy / "turnpress" / "core" / "registry.py"
    registry.write_text(registry.read_text() + "\nimport turnpress.core.trace  # noqa: E402\n")
    broken = _lint_imports(copy)
    assert broken.returncode != 0
    assert "turnpress layers (docs/design.md §1) KEPT" in broken.stdout
    assert "the core's own layers (docs/design.md §1) BROKEN" in broken.stdout
    assert "turnpress.core.registry -> turnpress.core.trace" in broken.stdout


def test_lisp_and_plugins_are_independent_layers(tmp_path: Path) -> None:
    copy = _copy_package(tmp_path)
    (copy / "turnpress" / "lisp" / "_uses_a_plugin.py").write_text(
        '"""The interpreter importing a strategy, against the layers."""\n\n'
        "import turnpress.plugins.rolling_window  # noqa: F401\n")
    broken = _lint_imports(copy)
    assert broken.returncode != 0
    assert "turnpress.lisp._uses_a_plugin -> turnpress.plugins.rolling_window" in broken.stdout


def test_no_module_of_turnpress_is_in_an_import_cycle() -> None:
    graph = grimp.build_graph("turnpress", exclude_type_checking_imports=True)
    assert len(graph.modules) > 100
    assert import_cycles(graph) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert import_cycles(_graph({"p.a": ["p.b"], "p.b": ["p.c"], "p.c": []})) == []
    assert import_cycles(_graph({"p.a": ["p.b"], "p.b": ["p.c"], "p.c": ["p.a"],
                                 "p.d": ["p.a"]})) == [["p.a", "p.b", "p.c"]]
    assert import_cycles(_graph({"p.a": ["p.a"]})) == [["p.a"]]


def test_imports_inside_functions_are_only_those_of_the_allow_list() -> None:
    found = function_level_imports(PACKAGE)
    assert set(found) == set(FUNCTION_LEVEL_IMPORTS), (
        "an import inside a function is only for an optional dependency or the CLI's "
        "lazy loading; move it to the top of its module (or, for one of those, add it "
        f"to FUNCTION_LEVEL_IMPORTS with its reason): {sorted(found)}")
    assert len(FUNCTION_LEVEL_IMPORTS) < 15
    for (rel, _module), lines in found.items():
        text = (ROOT / rel).read_text(encoding="utf-8").splitlines()
        for line in lines:
            assert "#" in text[line - 1], f"{rel}:{line}: say why this import is lazy"


def test_the_allow_list_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "mod.py").write_text(
        "import json\n\n\ndef f():\n    import os\n    from . import sibling\n\n"
        "    def inner():\n        import re\n    return os\n")
    assert function_level_imports(package) == {
        ("pkg/mod.py", "os"): [5], ("pkg/mod.py", "."): [6], ("pkg/mod.py", "re"): [9]}


@pytest.mark.parametrize("path", sorted(p.relative_to(ROOT).as_posix()
                                        for p in (PACKAGE / "core").rglob("*.py")))
def test_core_files_stay_short(path: str) -> None:
    lines = len((ROOT / path).read_text(encoding="utf-8").splitlines())
    assert lines <= 500 or path in LONG_CORE_FILES, (
        f"{path} has {lines} lines; split it by job, or say in docs/design.md §1 why not "
        f"and list it in LONG_CORE_FILES")
