"""Gustafson, Thompson & de Freitas 2007's label-feature samplers: the collapsed Gibbs sweep over region labels and
feature-relevance indicators (``gibbs``), its moves (single flips, joint indicator-label flips, CVFS column flips),
the sampler state, and the collapsed Normal-inverse-Wishart and Beta predictive terms."""
