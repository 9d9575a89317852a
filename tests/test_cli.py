"""The command line answers at once (no JAX, NumPyro, ArviZ or matplotlib for help and listings), documents every
argument with its default, and reports user errors in one line."""
import json
import subprocess
import sys

import pytest

from zoo import snapshot
from zoo.cli import build_parser, main

HEAVY = ("jax", "numpyro", "arviz", "matplotlib", "scipy", "sklearn")


def _modules_loaded_by(argv: list[str]) -> set[str]:
    code = ("import sys, contextlib, io\nfrom zoo.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try:\n        main({argv!r})\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in sys.modules if '.' not in m))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"')))


def test_catalog_snapshot_is_fresh():
    # `zoo list` answers from the stored snapshot only while it matches the sources; regenerate with
    # `python -m zoo.snapshot` after changing a paper, data or experiment module
    stored = snapshot.load()
    assert stored is not None, "zoo/catalog_snapshot.json is stale: run `python -m zoo.snapshot`"
    assert stored == snapshot.build(), "zoo/catalog_snapshot.json differs from the live catalog: run " \
                                       "`python -m zoo.snapshot`"


@pytest.mark.parametrize("argv", [["--help"], ["list"], ["list", "--datasets"], ["fit", "--help"],
                                  ["reproduce", "--help"], ["bench", "--help"]])
def test_help_and_listings_load_no_numerical_library(argv):
    loaded = _modules_loaded_by(argv)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_every_argument_has_help_and_shows_its_default():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in subparsers.choices.items():
        for action in sub._actions:
            if action.dest == "help":
                continue
            assert action.help, f"zoo {name}: {action.dest} has no help text"
        text = sub.format_help()
        if any(a.default not in (None, False, [], "==SUPPRESS==") for a in sub._actions if a.dest != "help"):
            assert "(default:" in text, f"zoo {name} --help shows no defaults"


def test_list_shows_default_and_other_methods(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "default method" in out
    row = next(line for line in out.splitlines() if line.startswith("kueck04.hybrid"))
    assert "blocked_gibbs" in row and "blocked_gibbs_mh" in row


def test_list_datasets_marks_presence(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DATA", str(tmp_path))
    (tmp_path / "mil_benchmarks").mkdir()
    (tmp_path / "mil_benchmarks" / "musk1.npz").write_bytes(b"")
    assert main(["list", "--datasets"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert "present" in rows["musk1"] and str(tmp_path / "mil_benchmarks") in rows["musk1"]
    assert "missing" in rows["musk2"] and "missing" in rows["corel5k"]
    assert "synthetic" in rows["kueck04_ring"]


@pytest.mark.parametrize("argv, message", [
    (["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--option", "n_components"],
     "KEY=VALUE"),
    (["fit", "carbonetto03.shrinkage_mixture", "--data", "nope.npy"], "not found"),
    (["bench", "no_such_benchmark"], "unknown benchmark"),
])
def test_user_errors_exit_2_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"zoo {argv[0]}:") and message in err and len(err.splitlines()) == 1


def test_bench_refuses_a_benchmark_whose_peer_is_not_installed(monkeypatch, capsys):
    """A peer's optional package (the [bench] extra) is checked before anything runs, named in one line."""
    import zoo.bench
    zoo.bench.benchmarks()
    monkeypatch.setitem(zoo.bench._REQUIRES, "gmm", ("zoo_no_such_package",))
    assert zoo.bench.missing_requirements("gmm") == ("zoo_no_such_package",)
    assert main(["bench", "gmm"]) == 2
    err = capsys.readouterr().err.strip()
    assert "zoo_no_such_package" in err and '.[bench]' in err and len(err.splitlines()) == 1


def test_fit_keeps_an_existing_output_file(tmp_path, capsys):
    out = tmp_path / "precious.nc"
    out.write_bytes(b"keep me")
    assert main(["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err and out.read_bytes() == b"keep me"
    assert main(["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--out",
                 str(tmp_path / "no_such_dir" / "x.nc")]) == 2
    assert main(["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--out", str(tmp_path)]) == 2
