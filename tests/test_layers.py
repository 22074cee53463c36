"""The package's layers, read from the source with ``ast`` (no lapcli module is imported here).

Every import statement counts, at module level and inside functions alike (a lazy import is still
a dependency; it only runs later). Relative imports are resolved to absolute module names, and
``from X import name`` where ``X.name`` is itself a module of lapcli counts as importing
``X.name`` (not ``X``). ``import a.b.c`` counts as importing ``a.b.c`` only: the parent packages'
``__init__`` modules run too, but they are not an edge of the importer. Imports by string
(``importlib.import_module``, the registry's engine table, lapcli/__init__.py's lazy names) are
not statements and are not seen here.

Checked: no import cycle among lapcli modules; no engine module imports another engine module;
nothing imports "up" the rank table below; ``lapcli.cli.gpu_start`` is imported only by the entry
point and the command-line package; and no module (the CUDA sources under lapcli/kernels/ aside)
is longer than MAX_LINES.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "lapcli"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / PACKAGE
MAX_LINES = 400

# A module's rank is the rank of its longest matching entry: an entry "a.b" matches "a.b" and
# everything under it, except the entries of EXACT_RANKS, which match that one module (a package's
# __init__) only. A module may import modules of its own rank or lower.
EXACT_RANKS = {
    "lapcli": 0,  # the package __init__
    "lapcli.engines": 4,  # the package __init__
}
PREFIX_RANKS = {
    "lapcli.errors": 0, "lapcli.arrays": 0, "lapcli.steps": 0,
    "lapcli.work": 1, "lapcli.float64_exact": 1, "lapcli.work_dtypes": 1, "lapcli.headroom": 1, "lapcli.sums": 1, "lapcli.feasibility": 1, "lapcli.problem": 1, "lapcli.points": 1, "lapcli.points_frame": 1,
    "lapcli.generate": 1, "lapcli.io": 1,
    "lapcli.cuda": 2, "lapcli.ragged": 2,  # the members' layout; packs through lapcli.cuda.ragged_pack
    "lapcli.ragged_integers": 2,
    "lapcli.certificate": 2, "lapcli.duals": 2, "lapcli.points_certificate": 2,  # the certificate's device pass launches through lapcli.cuda.runtime
    "lapcli.cost_cap": 2,  # judges a certificate again (lapcli.certificate.judged)
    "lapcli.engines.base": 3, "lapcli.engines.cpu": 3, "lapcli.engines.cuda": 3, "lapcli.twins": 3,
    "lapcli.engines.registry": 4, "lapcli.engines.auto": 4, "lapcli.options": 4, "lapcli.input_device": 4,
    "lapcli.results": 5, "lapcli.report": 5, "lapcli.cost_limit": 5,
    "lapcli.api": 5, "lapcli.pipeline": 5, "lapcli.pipeline_points": 5, "lapcli.scale": 5, "lapcli.scale_array": 5, "lapcli.info": 5,
    "lapcli.bench": 6,
    "lapcli.cli": 7,
    "lapcli.entry": 8, "lapcli.__main__": 8,
}

ENGINE_PACKAGES = ("lapcli.engines.cpu", "lapcli.engines.cuda")


def registered_engine_modules() -> set[str]:
    """The modules the registry loads to run an engine (read from registry.py's source, as a string
    each: the registry imports none of them)."""
    source = (PACKAGE_DIR / "engines" / "registry.py").read_text()
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.startswith(tuple(f"{p}." for p in ENGINE_PACKAGES))}


# ----------------------------------------------------------------------------- reading the source
def module_files(package_dir: Path = PACKAGE_DIR, package: str = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """{module name: (file, is a package __init__)} for every .py file under ``package_dir``."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join([package, *parts])] = (path, is_package)
    return found


def resolve_base(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name ``from <level dots><target> import …`` refers to inside ``module``."""
    if level == 0:
        return target or ""
    package = module if is_package else module.rpartition(".")[0]
    parts = package.split(".")
    if level - 1 >= len(parts):
        raise ValueError(f"{module}: a relative import of level {level} goes above the top-level package")
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{target}" if target else base


def imports_of(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The lapcli modules (of ``known``) that ``source`` (module ``module``) imports, anywhere."""
    edges = set()

    def add(name: str) -> None:
        # a name below a known module that is not itself one (impossible for valid imports, but a
        # typo should not vanish): charge the longest known prefix
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            edges.add(name)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_base(module, is_package, node.level, node.module)
            if not (base == PACKAGE or base.startswith(PACKAGE + ".")):
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if alias.name != "*" and submodule in known else base)
    edges.discard(module)
    return edges


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    known = set(files)
    return {module: imports_of(path.read_text(encoding="utf-8"), module, is_package, known)
            for module, (path, is_package) in files.items()}


@pytest.fixture(scope="module")
def graph():
    found = import_graph()
    assert len(found) > 20, f"found only {sorted(found)} under {PACKAGE_DIR}"
    return found


def rank_of(module: str) -> int | None:
    if module in EXACT_RANKS:
        return EXACT_RANKS[module]
    matches = [prefix for prefix in PREFIX_RANKS if module == prefix or module.startswith(prefix + ".")]
    return PREFIX_RANKS[max(matches, key=len)] if matches else None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a list of modules, first == last) per strongly connected component of more than
    one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(set(component))
    return [cycle_in(graph, component) for component in components]


def cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the smallest-named module of a strongly connected component."""
    start = min(component)
    previous = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    path = [node]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle in the component {sorted(component)}")


# ----------------------------------------------------------------------------- the reader itself
def test_the_reader_resolves_relative_and_submodule_imports():
    known = {"lapcli", "lapcli.errors", "lapcli.batch", "lapcli.cuda", "lapcli.cuda.staging",
             "lapcli.engines", "lapcli.engines.base", "lapcli.engines.cuda", "lapcli.engines.cuda.batch",
             "lapcli.engines.cuda.common", "lapcli.cli", "lapcli.cli.gpu_start"}
    source = """
import numpy
import lapcli.errors
from . import common
from .. import base
from ..base import BatchEngineResult
from ...cuda import staging, UPLOAD_LIMIT
from ... import errors as e
from lapcli.cli import gpu_start


def lazy():
    from ...batch import work_stack
    from ...cuda.staging import upload
"""
    got = imports_of(source, "lapcli.engines.cuda.batch", False, known)
    assert got == {"lapcli.errors", "lapcli.engines.cuda.common", "lapcli.engines.base", "lapcli.cuda.staging",
                   "lapcli.cuda", "lapcli.cli.gpu_start", "lapcli.batch"}
    # in a package's __init__, one dot is the package itself
    assert imports_of("from .registry import get\nfrom ..cuda.probe import x\nfrom .cuda import batch",
                      "lapcli.engines", True, known | {"lapcli.engines.registry", "lapcli.cuda.probe"}) == {
        "lapcli.engines.registry", "lapcli.cuda.probe", "lapcli.engines.cuda.batch"}
    assert resolve_base("lapcli.engines.cuda.batch", False, 3, None) == "lapcli"
    assert resolve_base("lapcli.cli", True, 2, "io") == "lapcli.io"
    with pytest.raises(ValueError):
        resolve_base("lapcli.io", False, 2, None)


def test_the_cycle_finder_names_a_cycle():
    found = cycles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}})
    assert sorted(found) == [["a", "b", "c", "a"], ["e", "e2", "e"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_known_edges_of_the_tree_are_seen(graph):
    """Edges checked by hand in the source (relative imports of each depth, lazy ones inside
    functions, ``from . import module``); if one moves, update this list, not the reader."""
    expected = {
        ("lapcli.engines", "lapcli.cuda.probe"),  # engines/__init__.py: from ..cuda.probe import cuda_status
        ("lapcli.engines", "lapcli.engines.registry"),  # from .registry import ...
        ("lapcli.engines.cuda.common", "lapcli.engines.base"),  # from ..base import ...
        ("lapcli.engines.cuda.common", "lapcli.cuda.hungarian"),  # from ...cuda.hungarian import ...
        ("lapcli.engines.base", "lapcli.steps"),  # from ..steps import StepStat
        ("lapcli.engines.base", "lapcli.certificate"),  # inside certified_result: from ..certificate import certify
        ("lapcli.certificate", "lapcli.errors"),  # from .errors import SolverError
    }
    missing = {edge for edge in expected if edge[1] not in graph.get(edge[0], set())}
    assert not missing, f"the reader missed {sorted(missing)}"


# ----------------------------------------------------------------------------- the layers
def test_no_import_cycle(graph):
    found = cycles(graph)
    assert not found, "import cycles among lapcli modules:\n" + "\n".join(" -> ".join(c) for c in found)


def engine_modules(graph) -> set[str]:
    """The registered engines' modules; their helpers (engines/cuda/common.py, the NumPy engine's
    algorithm numpy_hungarian.py) are not engines and may be imported by them."""
    engines = registered_engine_modules()
    assert engines <= set(graph), f"registered engine modules without a file: {engines - set(graph)}"
    return engines


def test_engine_modules_do_not_import_each_other(graph):
    engines = engine_modules(graph)
    assert {"lapcli.engines.cpu.numpy", "lapcli.engines.cuda.hungarian", "lapcli.engines.cuda.batch"} <= engines
    assert not engines & {"lapcli.engines.cpu", "lapcli.engines.cuda", "lapcli.engines.cuda.common"}
    bad = sorted((module, imported) for module in engines for imported in graph[module] & engines)
    assert not bad, "engine modules import other engine modules (shared code goes to engines/cuda/common.py " \
                    "or below the engines):\n" + "\n".join(f"{a} imports {b}" for a, b in bad)


def test_every_module_has_a_rank(graph):
    unranked = sorted(module for module in graph if rank_of(module) is None)
    assert not unranked, (f"modules not in tests/test_layers.py's rank table: {unranked}; "
                          "place each in PREFIX_RANKS (or EXACT_RANKS for a package __init__)")


def test_nothing_imports_up_the_layers(graph):
    up = sorted((rank_of(module), module, rank_of(imported), imported)
                for module, imported_set in graph.items() for imported in imported_set
                if rank_of(module) is not None and rank_of(imported) is not None
                and rank_of(imported) > rank_of(module))
    assert not up, "imports up the layers (rank table in tests/test_layers.py):\n" + "\n".join(
        f"{module} (rank {r}) imports {imported} (rank {ri})" for r, module, ri, imported in up)


def test_gpu_start_is_imported_only_by_the_entry_point_and_the_cli(graph):
    allowed = lambda module: module == "lapcli.entry" or module == "lapcli.cli" or module.startswith("lapcli.cli.")  # noqa: E731
    importers = sorted(module for module, imported in graph.items() if "lapcli.cli.gpu_start" in imported)
    assert "lapcli.entry" in importers
    assert [m for m in importers if not allowed(m)] == []


def long_modules(limit: int = MAX_LINES) -> dict[str, int]:
    kernels = PACKAGE_DIR / "kernels"
    lengths = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if kernels in path.parents:
            continue
        with path.open(encoding="utf-8") as handle:
            lines = sum(1 for _ in handle)
        if lines > limit:
            lengths[path.relative_to(PACKAGE_DIR.parent).as_posix()] = lines
    return lengths


def test_no_module_is_longer_than_the_limit():
    over = long_modules()
    assert not over, f"modules over {MAX_LINES} lines: " + ", ".join(f"{p} ({n})" for p, n in over.items())
