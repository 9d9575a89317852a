"""Custom inference kernels: MCMC moves, EM, variational EM, VI (installed as zoo.inference; knows no models)."""
