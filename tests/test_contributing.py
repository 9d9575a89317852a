"""CONTRIBUTING.md is true to the code: a toy paper added by its steps (a program, a method, a loader, an
experiment in the run / report / plot shape, a benchmark module) in a copy of the package is found by
``zoo.catalog()``, ``zoo list``, ``zoo fit``, ``zoo reproduce`` and ``zoo bench``, and the registry enforces the
option contract on it."""
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]

TOY_PAPER = '''
"""Toy 2026: the mean of a normal sample (registration only)."""
import numpy as np
import numpyro
import numpyro.distributions as dist

import zoo.data.toy  # noqa: F401
from zoo.models.toy import normal_mean_program
from zoo.core.registry import register_method, register_model
from zoo.core.fit import Fit
from zoo.core.idata import to_inference_data


def _build(prior_scale: float = 10.0):
    from zoo.core.options import positive_float
    prior_scale = positive_float(prior_scale, "prior_scale")
    return normal_mean_program, {"prior_scale": prior_scale}, {"mu": dist.Normal(0.0, prior_scale)}


register_model("toy.normal_mean", paper="Toy 2026", title="mean of a normal sample", build=_build,
               data_kind="ndarray", default_method="conjugate", headline=("mu",),
               program_args=lambda spec, data: {"x": np.asarray(data, dtype=float)})


@register_method("toy.normal_mean", "conjugate")
def conjugate(spec, data, seed=0, num_chains=2, num_samples=200):
    """Exact draws from the conjugate normal posterior."""
    x = np.asarray(data, dtype=float)
    prior = spec.priors["mu"]
    precision = 1.0 / float(prior.scale) ** 2 + x.size
    mean = (float(prior.loc) / float(prior.scale) ** 2 + x.sum()) / precision
    rng = np.random.default_rng(seed)
    draws = rng.normal(mean, precision ** -0.5, size=(num_chains, num_samples))
    return Fit(idata=to_inference_data({"mu": draws}), spec=None, method="")
'''

TOY_MODEL = '''
import numpyro
import numpyro.distributions as dist


def normal_mean_program(x, prior_scale=10.0):
    mu = numpyro.sample("mu", dist.Normal(0.0, prior_scale))
    numpyro.sample("x", dist.Normal(mu, 1.0), obs=x)
'''

TOY_DATA = '''
import numpy as np

from zoo.data.location import register_loader


@register_loader("toy_normal", "Toy 2026: 50 draws of N(1.5, 1) (synthetic)")
def toy_normal(n: int = 50, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(1.5, 1.0, size=n)
'''

TOY_EXPERIMENT = '''
import dataclasses

import numpy as np

import zoo
from zoo.metrics import rms
from zoo.reports import Figure, PaperReport, Section, Table, save_figure


@dataclasses.dataclass
class PosteriorResult:
    mean: float
    sd: float
    error: float


def run_posterior(fast: bool) -> PosteriorResult:
    fit = zoo.fit(zoo.model("toy.normal_mean"), zoo.load_dataset("toy_normal"), seed=0,
                  num_samples=50 if fast else 200)
    mu = fit.idata.posterior["mu"].values
    return PosteriorResult(float(mu.mean()), float(mu.std()), rms(np.array([mu.mean()]), np.array([1.5])))


def posterior_table(result: PosteriorResult) -> Table:
    return Table("mu", ["zoo", "paper", "sd"], [[result.mean, 1.5, result.sd]], note=f"error {result.error:.3f}")


def plot_posterior(result: PosteriorResult, path) -> Figure:
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    ax.errorbar([0], [result.mean], yerr=[result.sd])
    return Figure("posterior of mu", save_figure(fig, path), "mean +- sd")


def reproduce(out_dir, fast=False):
    result = run_posterior(fast)
    report = PaperReport(paper="toy", title="Toy 2026")
    report.add(Section("posterior mean", [posterior_table(result), plot_posterior(result, out_dir / "toy.png")]))
    return report
'''

TOY_BENCH = '''
from zoo.bench import register_benchmark


@register_benchmark("toy", peer="NumPy")
def bench_toy(fast=False):
    return {"ratio": 1.0}
'''


def _package_copy(dest: pathlib.Path) -> pathlib.Path:
    """A copy of the installed layout: zoo/ with models/ and inference/ as zoo.models and zoo.inference."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "zoo", dest / "zoo", ignore=ignore)
    shutil.copytree(ROOT / "models", dest / "zoo" / "models", ignore=ignore)
    shutil.copytree(ROOT / "inference", dest / "zoo" / "inference", ignore=ignore)
    return dest


def test_a_toy_paper_added_by_the_documented_steps_is_found_everywhere(tmp_path):
    src = _package_copy(tmp_path / "src")
    (src / "zoo" / "models" / "toy.py").write_text(TOY_MODEL)
    (src / "zoo" / "papers" / "toy.py").write_text(TOY_PAPER)
    (src / "zoo" / "data" / "toy.py").write_text(TOY_DATA)
    (src / "zoo" / "experiments" / "toy.py").write_text(TOY_EXPERIMENT)
    (src / "zoo" / "experiments" / "bench" / "toy.py").write_text(TOY_BENCH)
    check = textwrap.dedent(f'''
        import contextlib, io, pathlib
        import pytest
        import zoo
        from zoo.cli import main
        assert pathlib.Path(zoo.__file__).is_relative_to({str(src)!r}), zoo.__file__
        assert "toy.normal_mean" in {{card.id for card in zoo.catalog()}}
        assert set(zoo.methods("toy.normal_mean")) == {{"conjugate", "nuts", "svi", "map"}}
        spec = zoo.model("toy.normal_mean", priors={{"mu": "Normal(0.0, 5.0)"}})
        fit = zoo.fit(spec, zoo.load_dataset("toy_normal"), num_samples=50)
        assert fit.spec is spec and fit.method == "conjugate" and fit.headline == ["mu"]   # filled by the registry
        assert fit.idata.posterior["mu"].shape == (2, 50)
        with pytest.raises(ValueError, match="bogus: unknown option .*known options: num_chains, num_samples"):
            zoo.fit(spec, zoo.load_dataset("toy_normal"), bogus=1)
        with pytest.raises(ValueError, match="bogus: unknown option"):
            zoo.fit(spec, zoo.load_dataset("toy_normal"), method="nuts", bogus=1)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["list", "--datasets"]) == 0
            assert main(["reproduce", "toy", "--out", {str(tmp_path / "reports")!r}]) == 0
            assert main(["bench", "toy", "--out", {str(tmp_path / "bench")!r}]) == 0
        text = out.getvalue()
        assert "toy.normal_mean" in text and "toy_normal" in text
        assert "Toy 2026" in pathlib.Path({str(tmp_path / "reports" / "index.md")!r}).read_text()
        assert pathlib.Path({str(tmp_path / "reports" / "toy" / "toy.png")!r}).is_file()
        assert pathlib.Path({str(tmp_path / "bench" / "bench.json")!r}).is_file()
        ''')
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    result = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
