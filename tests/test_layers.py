"""The dependency direction of DESIGN.md, enforced: the import-linter contracts of ``.importlinter`` hold, and
importing any module of ``zoo.inference`` or ``zoo.models`` loads neither ArviZ, matplotlib nor the registry (tqdm
comes with NumPyro itself, so the contract checks only that zoo's kernels do not import it)."""
import ast
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _installed_layout(dest: pathlib.Path) -> pathlib.Path:
    """zoo/ with models/ and inference/ inside, as installed (import-linter reads packages from disk and does not
    follow setuptools' package-dir mapping of the editable install)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "zoo", dest / "zoo", ignore=ignore)
    shutil.copytree(ROOT / "models", dest / "zoo" / "models", ignore=ignore)
    shutil.copytree(ROOT / "inference", dest / "zoo" / "inference", ignore=ignore)
    shutil.copy(ROOT / ".importlinter", dest / ".importlinter")
    return dest


def test_import_contracts_hold(tmp_path):
    layout = _installed_layout(tmp_path / "layout")
    lint = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    assert lint, "import-linter is part of the test extra: pip install -e '.[test]'"
    result = subprocess.run([lint, "--no-cache"], cwd=layout, env=dict(os.environ, PYTHONPATH=str(layout)),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_kernels_and_programs_load_without_the_user_layer():
    modules = sorted(module for module in zoo_modules() if module.startswith(("zoo.inference", "zoo.models")))
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n    importlib.import_module(name)\n"
            "print(sorted(m for m in sys.modules if m in ('arviz', 'matplotlib') or "
            "m in ('zoo.core.registry', 'zoo.core.fit', 'zoo.core.idata', 'zoo.api', 'zoo.core.priors', 'zoo.data')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout


def test_import_zoo_loads_no_numerical_library():
    """``import zoo`` is the package's lazy front (PEP 562 names): no JAX, NumPy, NumPyro or ArviZ until a name
    needs them (zoo.reference and zoo.check_sampler included; tests/core/test_core.py checks they still work)."""
    heavy = ("jax", "numpy", "numpyro", "arviz", "scipy")
    code = f"import sys, zoo\nprint(sorted(m for m in {heavy!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout


# --- no import cycles among zoo's modules -------------------------------------------------------------------------
def zoo_modules() -> dict[str, pathlib.Path]:
    """Every module of the installed package (``zoo.models`` and ``zoo.inference`` mapped from the root folders)
    -> its file."""
    out = {}
    for folder, package in ((ROOT / "zoo", "zoo"), (ROOT / "models", "zoo.models"),
                            (ROOT / "inference", "zoo.inference")):
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def imported_modules(path: pathlib.Path, module: str, known) -> set[str]:
    """The zoo modules a file imports anywhere (module level or inside functions: an import held apart by a
    function still ties the two modules), including ``importlib.import_module("zoo....")`` with a literal name."""
    out = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:      # ``from zoo.core import registry`` imports the module zoo.core.registry
                out.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.add(node.args[0].value)
    return {name for name in out if name in known and name != module}


def import_cycles() -> list[list[str]]:
    """Strongly connected components of more than one module in zoo's import graph (Tarjan)."""
    known = zoo_modules()
    graph = {m: sorted(imported_modules(p, m, known)) for m, p in known.items()}
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in graph:
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycle_among_zoo_modules():
    assert import_cycles() == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    """The check above can fail: two modules that import each other (one inside a function) are a cycle."""
    fake = tmp_path / "zoo"
    (fake / "core").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "core" / "__init__.py").write_text("")
    (fake / "core" / "a.py").write_text("from zoo.core import b\n")
    (fake / "core" / "b.py").write_text("def f():\n    from zoo.core.a import x\n")
    (fake / "c.py").write_text("import importlib\nimportlib.import_module('zoo.core.a')\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert import_cycles() == [["zoo.core.a", "zoo.core.b"]]


def test_at_most_twelve_modules_directly_in_zoo():
    """The public faces only (issue 28): everything else lives in a folder of its concept."""
    top = sorted(p.name for p in (ROOT / "zoo").glob("*.py"))
    assert len(top) <= 12, top
