"""No LAPACK-backed linear algebra in the zoo's kernels, models and paper modules (issue 17).

jaxlib 0.10.2's CPU LAPACK kernels (Cholesky, LU, triangular solve, ...) split a batched call over XLA's intra-op
thread pool and block a pool thread until the pieces are done; two such calls in flight on a 2-thread pool left
every thread waiting (0 % CPU, forever). The analysis and the plain-JAX replacements are in ``inference/linalg.py``;
this test keeps the forbidden calls from coming back. Every call counts, batched or not: an unbatched call becomes
a batched one as soon as a caller vmaps the code around it (chains, restarts, the Geweke tests).
"""
from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCANNED = ["inference", "models", "zoo/papers"]

# jnp.linalg's factorizing routines and anything from jax.scipy.linalg / lax.linalg (cholesky, cho_solve,
# solve_triangular, lu_factor, inv, solve, slogdet, det, eigh, qr, svd, ...); jnp.linalg.norm is plain HLO.
FORBIDDEN = re.compile(
    r"(jnp|jax\.numpy|np)\.linalg\.(cholesky|solve|inv|slogdet|det|eigh|eig|qr|svd|lstsq|pinv|matrix_power)\b"
    r"|jax\.scipy\.linalg|jsp\.linalg|scipy\.linalg|lax\.linalg|from\s+jax\.scipy\s+import\s+linalg"
    # NumPyro distributions that factor their matrices with jnp.linalg / solve_triangular inside: the programs use
    # zoo.models.gaussian.MultivariateNormal and zoo.models.shrinkage_mixture.InverseWishart instead
    r"|dist\.(MultivariateNormal|LowRankMultivariateNormal|MultivariateStudentT|InverseWishart|Wishart"
    r"|WishartCholesky|LKJ|LKJCholesky|MatrixNormal|GaussianRandomWalk|GaussianStateSpace)\b")

# file -> line fragments allowed, each with the reason it cannot deadlock.
ALLOWED: dict[str, tuple[str, ...]] = {
    # NumPy's own LAPACK (OpenBLAS) on host arrays after sampling: never traced, jitted or vmapped by JAX, so it
    # never runs on XLA's intra-op pool (imputing (mu, Sigma) for the posterior predictive; the log joint's
    # determinants of the active blocks)
    "zoo/papers/gustafson07_impute.py": ("np.linalg.cholesky(Sigma[c])",),
    "zoo/papers/kueck04_lp.py": ("np.linalg.slogdet(block)",),
}


def _offending_lines():
    found = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for number, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                if FORBIDDEN.search(code) and not any(ok in code for ok in ALLOWED.get(rel, ())):
                    found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_no_lapack_backed_linear_algebra_in_kernels_models_or_papers():
    offending = _offending_lines()
    assert not offending, ("LAPACK-backed calls can deadlock jaxlib 0.10.2's CPU runtime; use "
                           "zoo.inference.linalg (cholesky, cho_solve, spd_inverse, spd_logdet, ...):\n"
                           + "\n".join(offending))


def test_the_pattern_catches_each_forbidden_spelling():
    for text in ["jnp.linalg.cholesky(a)", "jnp.linalg.slogdet(a)[1]", "jax.scipy.linalg.cho_solve((L, True), b)",
                 "from jax.scipy.linalg import solve_triangular", "jnp.linalg.inv(a)", "np.linalg.solve(a, b)",
                 "from jax.scipy import linalg", "dist.MultivariateNormal(m, covariance_matrix=c)",
                 "dist.InverseWishart(df, scale_matrix=s)"]:
        assert FORBIDDEN.search(text), text
    for text in ["jnp.linalg.norm(r)", "from zoo.inference.linalg import cholesky", "cholesky(a)",
                 "MultivariateNormal(m, covariance_matrix=c)", "dist.Normal(0.0, 1.0)"]:
        assert not FORBIDDEN.search(text), text
