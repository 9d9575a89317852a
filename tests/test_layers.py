"""The dependency direction of DESIGN.md, enforced: the import-linter contracts of ``.importlinter`` hold, and
importing any module of ``zoo.inference`` or ``zoo.models`` loads neither ArviZ, matplotlib nor the registry (tqdm
comes with NumPyro itself, so the contract checks only that zoo's kernels do not import it)."""
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
    modules = sorted(f"zoo.inference.{p.stem}" for p in (ROOT / "inference").glob("*.py") if p.stem != "__init__")
    modules += sorted(f"zoo.models.{p.stem}" for p in (ROOT / "models").glob("*.py") if p.stem != "__init__")
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n    importlib.import_module(name)\n"
            "print(sorted(m for m in sys.modules if m in ('arviz', 'matplotlib') or "
            "m in ('zoo.registry', 'zoo.results', 'zoo.api', 'zoo.priors', 'zoo.data')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout


def test_import_zoo_loads_no_numerical_library():
    """``import zoo`` is the package's lazy front (PEP 562 names): no JAX, NumPy, NumPyro or ArviZ until a name
    needs them (zoo.reference and zoo.check_sampler included; tests/test_core.py checks they still work)."""
    heavy = ("jax", "numpy", "numpyro", "arviz", "scipy")
    code = f"import sys, zoo\nprint(sorted(m for m in {heavy!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout
