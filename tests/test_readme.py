"""README.md is true: its Python blocks run as written, and CI runs its two set-up commands from the file itself."""
import json
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


#: the child that runs the blocks: each block's exact text, in README order, as a script of its own (a fresh
#: namespace named __main__: a block may not lean on names an earlier block defined), all in one interpreter, so that
#: Python, JAX, NumPyro and zoo are imported once instead of once per block (issue 35: about 5 s of each block's
#: time on a 2-core machine). A block that raises is reported with its traceback and the next blocks still run.
_RUN_BLOCKS = """
import json, sys, traceback
blocks = json.load(sys.stdin)
failed = False
for index, block in enumerate(blocks):
    try:
        exec(compile(block, f"<README.md python block {index}>", "exec"), {"__name__": "__main__"})
    except BaseException:
        failed = True
        print(f"README-BLOCK {index} FAILED", flush=True)
        traceback.print_exc()
        print(f"README-BLOCK-END {index}", file=sys.stderr, flush=True)
    else:
        print(f"README-BLOCK {index} OK", flush=True)
sys.exit(1 if failed else 0)
"""


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    """Every Python block of the README run by ``_RUN_BLOCKS`` in a fresh directory: (stdout, stderr, timed out)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    # a watchdog: a block that hangs fails the tests instead of stalling CI
    try:
        result = subprocess.run([sys.executable, "-c", _RUN_BLOCKS], input=json.dumps(PYTHON_BLOCKS),
                                cwd=tmp_path_factory.mktemp("readme"), env=env, capture_output=True, text=True,
                                timeout=600)
    except subprocess.TimeoutExpired as err:
        return (err.stdout or b"").decode() if isinstance(err.stdout, bytes) else (err.stdout or ""), "", True
    return result.stdout, result.stderr, False


def _block_error(stderr: str, index: int) -> str:
    """The traceback block ``index`` printed (the child separates them by ``README-BLOCK-END``)."""
    for part in stderr.split("README-BLOCK-END "):
        if f'"<README.md python block {index}>"' in part:
            return part[-3000:]
    return stderr[-3000:]


#: the blocks run in the extended tier (CI runs it after the default suite, ``.ci/run``), like the notebooks: a child
#: interpreter that compiles four models' fits took 52-70 s of the default suite's 2-core wait (issue 35); the APIs
#: the blocks call are each tested in the default suite (tests/core, tests/data, tests/papers)
@pytest.mark.extended
@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_readme_python_block_runs_as_written(index, readme_run):
    stdout, stderr, timed_out = readme_run
    assert not timed_out, f"the README blocks took over 600 s; finished: {stdout.count('README-BLOCK ')}"
    assert f"README-BLOCK {index} OK" in stdout.splitlines(), _block_error(stderr, index)


def test_ci_runs_both_readme_commands_from_the_readme():
    commands = readme_commands(README)
    assert set(commands) >= {"main-job", "tests"}
    assert "zoo reproduce all --fast" in commands["main-job"] and 'pip install -e .' in commands["main-job"]
    assert "[test]" not in commands["main-job"], "the main job runs on the bare install"
    assert "pytest" in commands["tests"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "readme_commands.py main-job" in ci and "readme_commands.py tests" in ci
