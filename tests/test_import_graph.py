"""The harness's and the data sets' modules import one another one way only (issue 18)."""

import ast
from pathlib import Path

import pytest

import ibp_rflvm

ROOT = Path(ibp_rflvm.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = ["ibp_rflvm", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of `package` it imports, at the top or inside a function."""
    folder = ROOT.joinpath(*package.split(".")[1:])
    paths = {_module_name(p): p for p in folder.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        is_pkg = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    here = name.split(".") if is_pkg else name.split(".")[:-1]
                    parts = here[: len(here) - node.level + 1] + ([node.module] if node.module else [])
                    base = ".".join(parts)
                else:
                    base = node.module or ""
                # `from . import cells` names a module; `from .cells import x` names its module.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in paths and t != name}
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` as a list of modules, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in state and (found := visit(m)) is not None:
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)) is not None:
            return found
    return None


def test_cycle_finder_sees_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("package", ["ibp_rflvm.evaluation", "ibp_rflvm.datasets"])
def test_no_import_cycle_inside_the_package(package):
    graph = import_graph(package)
    assert len(graph) > 3 and any(graph.values())  # the graph was read, not empty
    assert find_cycle(graph) is None


def test_report_does_not_import_the_harness():
    graph = import_graph("ibp_rflvm.evaluation")
    assert "ibp_rflvm.evaluation.harness" not in graph["ibp_rflvm.evaluation.report"]
    assert "ibp_rflvm.evaluation.report" in graph["ibp_rflvm.evaluation.harness"]
