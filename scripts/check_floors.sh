#!/usr/bin/env bash
# Check the dependency floors declared in pyproject.toml (see docs/dependency-floors.md).
#
# Installs zoo into a fresh virtual environment with uv's `--resolution lowest-direct` (every direct dependency at
# the lowest version pyproject.toml allows, transitive ones at their newest) on the oldest supported Python, then
# runs a representative test subset. Not run by CI.
#
#   scripts/check_floors.sh                          # floors, on python3.11 (the oldest Python supported)
#   PYTHON=~/.pyenv/versions/3.13.0/bin/python RESOLUTION=highest scripts/check_floors.sh   # newest combination
#   KEEP=1 scripts/check_floors.sh                   # keep the environment (its path is printed)
#   UV_CACHE_DIR=~/.cache/uv scripts/check_floors.sh # reuse a uv cache (default: a fresh one, removed afterwards)
#
# Runtime (measured 2026-11-24 on a 2-core machine shared with other jobs, OMP_NUM_THREADS=1): the install takes
# 5 s on a warm uv cache, 12 s on a cold one (about 800 MB of uv cache); the tests (80) 5.5-7 minutes of wall time,
# about 2 min 40 s of CPU time (mostly XLA compilation).
# Needs network access to PyPI (or a mirror configured for pip/uv). Exit status: that of pytest.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3.11}
RESOLUTION=${RESOLUTION:-lowest-direct}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zoo-floors.XXXXXX")
export UV_CACHE_DIR=${UV_CACHE_DIR:-$WORK/uv-cache}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
if [[ -z "${KEEP:-}" ]]; then
    trap 'rm -rf "$WORK"' EXIT
fi

TESTS=(tests/core/test_core.py tests/papers/test_carbonetto03.py tests/papers/test_kueck04_api.py tests/papers/test_gustafson07_api.py
       tests/papers/test_ross03_api.py tests/papers/test_yakhnenko_vi.py)

version=$("$PYTHON" --version) || { echo "cannot run PYTHON=$PYTHON (give a path, e.g. ~/.pyenv/versions/3.11.7/bin/python)" >&2; exit 2; }
echo "== $version ($RESOLUTION) in $WORK"
"$PYTHON" -m venv "$WORK/tools"
"$WORK/tools/bin/python" -m pip install -q uv
"$PYTHON" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"

start=$SECONDS
# wheels only: a floor must not depend on building an old sdist (zoo itself, editable, is still built)
"$WORK/tools/bin/uv" pip install --python "$VPY" --resolution "$RESOLUTION" \
    --only-binary :all: -e "$ROOT" "pytest>=8.3"
echo "== installed in $((SECONDS - start)) s"
"$VPY" -m pip freeze --exclude-editable | grep -iE '^(jax|jaxlib|numpyro|optax|arviz|numpy|scipy|matplotlib|tqdm|scikit-image|scikit-learn|pandas|xarray|h5netcdf|h5py|ml.dtypes)=='

start=$SECONDS
cd "$ROOT"
status=0
"$VPY" -m pytest -q "${TESTS[@]}" -p no:cacheprovider || status=$?
echo "== tests finished in $((SECONDS - start)) s (exit $status)"
exit $status
