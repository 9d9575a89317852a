"""Carbonetto et al. 2003's Gaussian mixture and translation models: MAP-EM (``em``)."""
