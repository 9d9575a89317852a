"""The Kueck 2004 models through the public API: fit, InferenceData, predictions, priors, bad input."""
import arviz as az
import numpy as np
import pytest

import zoo
from zoo.data import Bags
from zoo.data.mil import (embedded_cluster_data, ring_data, stratified_bag_folds, subset_bags,
                          undersample_negative_groups)


@pytest.fixture(scope="module")
def ring():
    d = ring_data(n=100, seed=3)
    # duplicate two instances inside their bags: singular Psi'Psi blocks must not break anything
    X = d.X.copy()
    X[1] = X[0]
    X[7] = X[6]
    return Bags(X=X, bag_ids=d.bag_ids, bag_labels=d.bag_labels, group_labels=d.group_labels,
                fractions=d.fractions, instance_labels=d.instance_labels)


@pytest.fixture(scope="module")
def ring_fit(ring):
    # 2 x (150 + 100) sweeps (issue 35; 400 + 200 before): sampling, not compiling, was a third of this file's time
    # (a 2 x 600-sweep refit of the compiled sampler took 27 s of a loaded machine's 62 s); the positive bags still
    # rank far above the negative ones (share of ordered pairs: 0.97 and 0.99 at 2 x (400 + 200), seeds 0 and 1;
    # 0.93 at 2 x (100 + 50), seed 2; the test asks for 0.75)
    spec = zoo.model("kueck04.constraint", kernel="gaussian", width=1.0)
    return zoo.fit(spec, Bags(ring.X, ring.bag_ids, bag_labels=ring.bag_labels), method="blocked_gibbs", seed=0,
                   num_chains=2, num_warmup=150, num_samples=100, progress_bar=False)


def test_catalog_and_default_method():
    ids = {c.id for c in zoo.catalog()}
    assert {"kueck04.supervised", "kueck04.constraint", "kueck04.measurement", "kueck04.hybrid"} <= ids
    assert zoo.core.registry.get_model("kueck04.constraint").default_method == "blocked_gibbs"
    assert {"blocked_gibbs", "blocked_gibbs_mh"} <= set(zoo.methods("kueck04.hybrid"))


def test_fit_inference_data_and_predictions(ring, ring_fit):
    idata = ring_fit.idata
    post = idata.posterior
    assert post.sizes["chain"] == 2 and post.sizes["draw"] == 100
    # the per-basis coefficients (one kernel per training instance) are per-unit draws; posterior: the headline
    beta = idata.unit_posterior["beta"]
    assert beta.shape == (2, 100, ring.X.shape[0]) and set(post.data_vars) == {"delta2", "n_active"}
    for name in ("gamma_acceptance", "n_active", "z_acceptance", "capacity_hits"):
        assert name in idata.sample_stats
    assert np.all(np.isfinite(beta.values)) and np.all(np.isfinite(post["delta2"].values))
    assert idata.log_likelihood["group_label"].shape == (2, 100, ring.n_bags)
    assert np.all(np.isfinite(idata.log_likelihood["group_label"].values))
    az.loo(idata)                                   # log_likelihood usable by ArviZ
    summary = ring_fit.summary()
    assert {"delta2", "n_active"} <= set(summary.index)
    pred = ring_fit.predict(Bags(ring.X, ring.bag_ids))
    assert pred.instance_proba.shape == (ring.X.shape[0],) and pred.bag_proba.shape == (ring.n_bags,)
    assert np.all((pred.bag_proba >= 0) & (pred.bag_proba <= 1))
    # the MIL constraint is learnt: positive bags rank above negative ones (5 positives in 100, short chains)
    pos, neg = pred.bag_proba[ring.bag_labels == 1], pred.bag_proba[ring.bag_labels == 0]
    assert np.mean(pos[:, None] > neg[None, :]) > 0.75     # well above chance (0.5)
    # bag probability is at least the largest instance probability in the bag (noisy-or over draws)
    inst_max = np.array([pred.instance_proba[ring.bag_ids == b].max() for b in range(ring.n_bags)])
    assert np.all(pred.bag_proba >= inst_max - 1e-9)


def test_hybrid_mh_sampler_and_nonconjugate_delta2_prior():
    d = embedded_cluster_data(n_groups=12, group_size=4, seed=1)
    spec = zoo.model("kueck04.hybrid", kernel="sigmoid", width=2.0, chi=10.0,
                     priors={"delta2": "HalfCauchy(10.0)"})
    fit = zoo.fit(spec, d, method="blocked_gibbs_mh", seed=1, num_chains=2, num_warmup=100, num_samples=100,
                  progress_bar=False, rescale=False,            # the thesis' sweep, without the rescaling move
                  chain_method="sequential")                    # chains one after the other (lax.map)
    assert not np.allclose(fit.idata.posterior["delta2"].values[0], fit.idata.posterior["delta2"].values[1])
    ss = fit.idata.sample_stats
    assert 0 < float(ss["z_acceptance"].mean()) <= 1
    assert 0 < float(ss["delta2_acceptance"].mean()) < 1      # the random-walk fallback moved
    assert np.all(np.isfinite(fit.idata.posterior["delta2"].values))


@pytest.mark.extended
@pytest.mark.filterwarnings("ignore:kueck04. the active set reached")   # a small capacity keeps the test fast
def test_collapsed_beta_move_through_the_api():
    """beta_move="laplace" with kernel selection, MIL bags and a non-conjugate delta2 prior: its acceptance is
    reported and the MIL signal is learnt; the move's options are checked."""
    d = embedded_cluster_data(n_groups=16, group_size=4, pure_negative_share=0.5, seed=2)
    bags = Bags(d.X, d.bag_ids, bag_labels=(d.instance_labels.reshape(16, 4).max(1)))
    spec = zoo.model("kueck04.constraint", kernel="gaussian", width=1.0, max_active=16,
                     priors={"delta2": "HalfCauchy(10.0)"})
    fit = zoo.fit(spec, bags, seed=0, num_chains=1, num_warmup=150, num_samples=150, progress_bar=False,
                  beta_move="laplace", laplace_tries=3)
    acc = fit.idata.sample_stats["beta_acceptance"].values
    assert 0.05 < acc.mean() <= 1 and np.all((acc >= 0) & (acc <= 1))
    assert np.all(np.isfinite(fit.idata.unit_posterior["beta"].values))
    pred = fit.predict(Bags(d.X, d.bag_ids))
    labels = bags.bag_labels
    assert np.mean(pred.bag_proba[labels == 1][:, None] > pred.bag_proba[labels == 0][None, :]) > 0.7
    with pytest.raises(ValueError, match="beta_move"):
        zoo.fit(spec, bags, beta_move="newton")
    with pytest.raises(ValueError, match="laplace_tries"):
        zoo.fit(spec, bags, beta_move="laplace", laplace_tries=-1)


def test_bad_input_raises_value_error_naming_the_field(ring):
    spec = zoo.model("kueck04.constraint")
    with pytest.raises(ValueError, match="bag_ids"):
        Bags(ring.X, np.where(ring.bag_ids == 3, 4, ring.bag_ids))           # bag 3 has no instance
    with pytest.raises(ValueError, match="X"):
        Bags(np.where(np.arange(ring.X.size).reshape(ring.X.shape) == 5, np.nan, ring.X), ring.bag_ids)
    with pytest.raises(ValueError, match="bag_labels"):
        Bags(ring.X, ring.bag_ids, bag_labels=ring.bag_labels[:-1])
    with pytest.raises(ValueError, match="fractions"):
        Bags(ring.X, ring.bag_ids, fractions=np.full(ring.n_bags, 1.5))
    with pytest.raises(ValueError, match="kernel"):
        zoo.model("kueck04.constraint", kernel="rbf")
    with pytest.raises(ValueError, match="width"):
        zoo.model("kueck04.constraint", width=0.0)
    with pytest.raises(ValueError, match="chi"):
        zoo.model("kueck04.constraint", chi=10.0)
    with pytest.raises(ValueError, match="nothing to learn"):
        zoo.fit(spec, Bags(ring.X, ring.bag_ids, bag_labels=np.zeros(ring.n_bags, int)))
    with pytest.raises(ValueError, match="group_labels"):
        zoo.fit(spec, Bags(ring.X, ring.bag_ids))
    with pytest.raises(ValueError, match="fractions"):
        zoo.fit(zoo.model("kueck04.measurement"), Bags(ring.X, ring.bag_ids, bag_labels=ring.bag_labels))
    with pytest.raises(ValueError, match="instance_labels"):
        zoo.fit(zoo.model("kueck04.supervised"), Bags(ring.X, ring.bag_ids, bag_labels=ring.bag_labels))
    single = Bags(ring.X[:3], np.array([0, 0, 1]), group_labels=np.array(["mixed", "mixed"]))
    with pytest.raises(ValueError, match="group_labels"):
        zoo.fit(spec, single)
    with pytest.raises(ValueError, match="chain_method"):
        zoo.fit(spec, ring, chain_method="pmap")
    with pytest.raises(ValueError, match="unknown option"):
        zoo.fit(spec, ring, num_samplez=10)
    with pytest.raises(ValueError, match="tau"):
        zoo.fit(zoo.model("kueck04.constraint", priors={"tau": "Uniform(0.0, 1.0)"}), ring)
    with pytest.raises(ValueError, match="data"):
        zoo.fit(spec, ring.X)


def test_undersampling_and_folds(ring):
    n_neg = int(np.sum(ring.group_labels == "negative"))
    small = undersample_negative_groups(ring, 5, method="random", seed=0)
    assert np.sum(small.group_labels == "negative") == 5
    assert np.sum(small.group_labels != "negative") == ring.n_bags - n_neg
    keywords = [{"sky", "water"} if i % 2 else {"grass"} for i in range(ring.n_bags)]
    sel = undersample_negative_groups(ring, 0.5, method="selective", keywords=keywords, concept="tiger")
    assert np.sum(sel.group_labels == "negative") == round(0.5 * n_neg)
    sub = subset_bags(ring, np.array([3, 0]))
    np.testing.assert_array_equal(sub.X[sub.bag_ids == 0], ring.X[ring.bag_ids == 3])
    folds = stratified_bag_folds(ring.bag_labels, n_folds=5, seed=0)
    for k in range(5):
        share = ring.bag_labels[folds == k].mean()
        assert abs(share - ring.bag_labels.mean()) < 0.15


@pytest.mark.slow
def test_numpyro_mcmc_driver_vectorized_chains():
    """The MCMCKernel driven by numpyro.infer.MCMC (vectorized chains) gives the same kind of Fit."""
    d = ring_data(n=30, seed=5)
    spec = zoo.model("kueck04.constraint", kernel="gaussian", width=1.0)
    fit = zoo.fit(spec, Bags(d.X, d.bag_ids, group_labels=d.group_labels), seed=2, num_chains=2, num_warmup=20,
                  num_samples=30, progress_bar=False, driver="numpyro", chain_method="vectorized")
    post = fit.idata.posterior
    assert fit.idata.unit_posterior["beta"].shape == (2, 30, 30) and post["n_active"].shape == (2, 30)
    assert not np.allclose(post["delta2"].values[0], post["delta2"].values[1])   # chains differ
    assert fit.idata.log_likelihood["group_label"].shape == (2, 30, d.n_bags)
