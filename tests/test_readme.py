"""README.md is true: its Python blocks run as written, and CI runs its two set-up commands from the file itself."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)\n```", README, re.DOTALL)

sys.path.insert(0, str(ROOT / ".ci"))
from readme_commands import readme_commands  # noqa: E402


def test_readme_has_python_examples():
    assert len(PYTHON_BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_readme_python_block_runs_as_written(index, tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    # a watchdog: a block that hangs fails the test instead of stalling CI
    result = subprocess.run([sys.executable, "-c", PYTHON_BLOCKS[index]], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_ci_runs_both_readme_commands_from_the_readme():
    commands = readme_commands(README)
    assert set(commands) >= {"main-job", "tests"}
    assert "zoo reproduce all --fast" in commands["main-job"] and 'pip install -e .' in commands["main-job"]
    assert "[test]" not in commands["main-job"], "the main job runs on the bare install"
    assert "pytest" in commands["tests"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "readme_commands.py main-job" in ci and "readme_commands.py tests" in ci
