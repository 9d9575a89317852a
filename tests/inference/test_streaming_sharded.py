"""zoo.fit(..., data_devices=2) for the MoM-LDA / MoM-HDP coordinate ascent (issue 21, point 5 of H2's brief):
the images split over 2 host devices (zoo.inference.sharding.fit_mean_field_sharded / fit_stick_breaking_sharded)
give the one-device fit's ELBO trace, draws, log likelihood and variational parameters to 1e-10 relative.

JAX fixes its devices when it starts, so the two-device fits run in a child process (this file is its script)."""
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.slow   # four compilations in a child process (~45 s CPU): over this file's share of the default suite
def test_sharded_topic_fits_equal_the_one_device_fits_on_two_devices():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", OMP_NUM_THREADS="1",
               JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env, capture_output=True, text=True,
                          timeout=600, cwd=HERE)
    assert done.returncode == 0, done.stdout + done.stderr[-5000:]
    assert done.stdout.count("ok") == 2, done.stdout


def test_data_devices_is_checked_before_the_topic_fit():
    import zoo
    from zoo.data.corel5k import simulate_multimodal
    data, _ = simulate_multimodal(0, n_images=20, n_topics=2, n_word_types=5, n_visual_types=6)
    for model in (zoo.model("yakhnenko.mom_lda", n_topics=2), zoo.model("yakhnenko.mom_hdp", truncation=3)):
        with pytest.raises(ValueError, match="data_devices"):
            zoo.fit(model, data, data_devices=0, progress_bar=False)


# ---------------------------------------------------------------------------------------------------------------
# the child process

def _compare_fits(one, sharded, what):
    assert set(one.idata.groups()) == set(sharded.idata.groups()), what
    for group in [g for g in one.idata.groups() if g != "observed_data"]:
        for name in one.idata[group].data_vars:
            a, b = one.idata[group][name].values, sharded.idata[group][name].values
            if name.endswith("_relabelled") or not np.issubdtype(a.dtype, np.floating):
                continue
            np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(a).max())),
                                       err_msg=f"{what} {group}.{name}")
    print("ok", what)


def _child():
    import jax

    import zoo
    from zoo.data.corel5k import simulate_multimodal
    assert jax.device_count() == 2
    data, _ = simulate_multimodal(0, n_images=37, n_topics=3, n_word_types=10, n_visual_types=12)
    opts = dict(seed=0, num_chains=2, max_iter=20, tol=1e-14, num_draws=5, progress_bar=False)
    lda = zoo.model("yakhnenko.mom_lda", n_topics=3)
    _compare_fits(zoo.fit(lda, data, **opts), zoo.fit(lda, data, data_devices=2, **opts), "mom_lda")
    hdp = zoo.model("yakhnenko.mom_hdp", truncation=4)
    _compare_fits(zoo.fit(hdp, data, method="stick_breaking_vi", **opts),
                  zoo.fit(hdp, data, method="stick_breaking_vi", data_devices=2, **opts), "mom_hdp")


if __name__ == "__main__":
    _child()
