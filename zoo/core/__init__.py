"""What every fit passes through: the registry (``registry``: model ids and methods), the model spec (``spec``),
the ``Fit`` (``fit``) and its InferenceData assembly (``idata``), the generic methods (``generic``), options and
seeds (``options``), declarative priors (``priors``), the one finish step after every runner (``finish``:
finiteness, inference kind, relabelling, provenance, convergence verdict) and its parts (``finite``, ``relabel``,
``provenance``, ``convergence``), fit files (``persist``), progress bars (``progress``) and module discovery
(``discovery``). Nothing here imports the diagnostics, the leaderboards, the experiments or the command line.
"""
