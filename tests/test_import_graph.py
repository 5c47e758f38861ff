"""The package's modules import one another one way only: the harness and the data sets inside
themselves (issue 18), and the core by declared floors with no cycle (issue 40)."""

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


# The core's floors ---------------------------------------------------------------------------

#: The package's floors, lowest first: a module imports modules of its own floor or lower ones
#: only. A name covers the module and, for a package, everything under it, so a folder is a
#: floor or a room on one and the few modules at the top of the package are rooms of their own.
#: The sampler can be read without the devices, the devices without the posterior side, the
#: posterior side without the estimators, and nothing but the harness and the command line
#: knows the harness.
FLOORS: tuple[tuple[str, ...], ...] = (
    # Plumbing that knows no model (checks, sparse input, threads, files, processes), the feature
    # map and the data sets.
    ("ibp_rflvm.plumbing", "ibp_rflvm.features", "ibp_rflvm.datasets"),
    # The model and its sampler, one floor each: moves and draws that know no likelihood; the
    # prior on Z (handed to the moves); the observation models; the types every layer shares;
    # the targets (the model kind, chosen once); the sweep over a target; what runs chains.
    ("ibp_rflvm.samplers",),
    ("ibp_rflvm.priors",),
    ("ibp_rflvm.likelihoods",),
    ("ibp_rflvm.state",),
    ("ibp_rflvm.targets",),
    ("ibp_rflvm.model",),
    ("ibp_rflvm.mcmc",),
    # The same sweep on devices: it registers its target with the targets below.
    ("ibp_rflvm.jax_backend",),
    # What a fit leaves and everything computed from it.
    ("ibp_rflvm.summaries",),
    # What a user calls.
    ("ibp_rflvm.estimator", "ibp_rflvm.adata", "ibp_rflvm.plots", "ibp_rflvm.baselines", "ibp_rflvm"),
    # The reproduction of the paper and the command line.
    ("ibp_rflvm.evaluation", "ibp_rflvm.cli"),
)

#: Imports by name (``importlib.import_module("ibp_rflvm...")``) that run up a floor: the one
#: way up, the documented ``ibp_rflvm.jax_backend.sweep_kernel`` that lives with the estimators.
UPWARD_BY_NAME = [("ibp_rflvm.jax_backend", "ibp_rflvm.estimator.device")]


def floor_of(module: str, floors=FLOORS) -> int | None:
    """The floor of `module`: that of the longest name in `floors` covering it (None: none does).
    The top package's name covers its ``__init__`` only, or it would cover every module."""
    best, floor = -1, None
    for level, names in enumerate(floors):
        for name in names:
            inside = module.startswith(name + ".") and "." in name
            if (module == name or inside) and len(name) > best:
                best, floor = len(name), level
    return floor


def upward_imports(graph: dict[str, set[str]], floors=FLOORS) -> list[tuple[str, str]]:
    """Every import ``(importer, imported)`` of `graph` from a lower floor to a higher one."""
    return sorted(
        (a, b)
        for a, targets in graph.items()
        for b in targets
        if floor_of(a, floors) is not None
        and floor_of(b, floors) is not None
        and floor_of(b, floors) > floor_of(a, floors)
    )


def test_floor_checker_sees_an_upward_import():
    floors = (("p.low",), ("p.high",), ("p",))
    assert upward_imports({"p.low.a": {"p.high"}, "p.high": set()}, floors) == [("p.low.a", "p.high")]
    assert upward_imports({"p.high": {"p.low.a"}, "p.low.a": set()}, floors) == []
    assert floor_of("p.other", floors) is None  # the top package's name covers only itself
    assert floor_of("p", floors) == 2
    # The longest name decides: a sub-package may sit on another floor than its parent.
    assert floor_of("p.low.x", (("p.low.x",), ("p.low",))) == 0


def test_every_module_has_a_floor():
    graph = import_graph("ibp_rflvm")
    assert len(graph) > 50
    loose = [m for m in graph if floor_of(m) is None]
    assert not loose, f"give these modules a floor in FLOORS: {loose}"


def test_no_import_runs_up_a_floor():
    assert upward_imports(import_graph("ibp_rflvm")) == []


def _called(call: ast.Call) -> str:
    return getattr(call.func, "attr", getattr(call.func, "id", ""))


def named_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the package's modules it imports by a constant name through ``import_module``."""
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        names = {
            node.args[0].value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and _called(node) == "import_module"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
        }  # fmt: skip
        if names:
            graph[_module_name(path)] = names
    return graph


def test_one_lookup_by_name_runs_up_a_floor():
    graph = named_imports()
    assert upward_imports(graph) == UPWARD_BY_NAME
    # The name still names a module, and that module's floor is the one allowed.
    (low, high), = UPWARD_BY_NAME
    assert high in import_graph("ibp_rflvm") and low in graph


def test_no_module_of_the_core_imports_the_devices():
    # make_target finds the device target the device package registers; the core never reaches up.
    graph = import_graph("ibp_rflvm")
    core = [m for m in graph if floor_of(m) is not None and floor_of(m) < floor_of("ibp_rflvm.jax_backend")]
    assert len(core) > 30
    assert [m for m in core if any(t.startswith("ibp_rflvm.jax_backend") for t in graph[m])] == []


def test_only_the_harness_and_the_command_line_import_the_harness():
    graph = import_graph("ibp_rflvm")
    harness = "ibp_rflvm.evaluation"
    readers = sorted(
        a for a, targets in graph.items()
        if not (a == harness or a.startswith(harness + ".") or a == "ibp_rflvm.cli")
        and any(b == harness or b.startswith(harness + ".") for b in targets)
    )  # fmt: skip
    assert readers == []


def test_no_import_cycle_between_modules():
    assert find_cycle(import_graph("ibp_rflvm")) is None


def test_no_source_module_is_over_600_lines():
    long = {p.relative_to(ROOT).as_posix(): n for p in ROOT.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}  # fmt: skip
    assert long == {}


# The model kind is chosen once ---------------------------------------------------------------


def kind_readers(root: Path = ROOT) -> list[str]:
    """Modules that read a likelihood's ``collapsed`` flag (the model kind)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        reads = [
            node for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "collapsed" and isinstance(node.ctx, ast.Load)
        ]  # fmt: skip
        if reads:
            found.append(".".join(("ibp_rflvm", *path.relative_to(root).with_suffix("").parts)))
    return sorted(m.removesuffix(".__init__") for m in found)


def test_kind_reader_finder_sees_a_read(tmp_path):
    (tmp_path / "a.py").write_text("def f(lik):\n    return 1 if lik.collapsed else 2\n")
    (tmp_path / "b.py").write_text("class L:\n    collapsed = True\n")
    assert [m.rsplit(".", 1)[-1] for m in kind_readers(tmp_path)] == ["a"]


def test_only_make_target_chooses_the_model_kind():
    # Every move and the sweep ask the target; the kind of target is chosen in one place.
    assert kind_readers() == ["ibp_rflvm.targets"]
