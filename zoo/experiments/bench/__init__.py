"""Benchmarks against peer libraries (``zoo bench``): one module per paper, each registering its benchmarks with
``zoo.bench.register_benchmark``; ``scaling`` (one to many devices) and ``streaming_topics`` (stochastic VI against
gensim) beside them. ``zoo bench`` imports only this package, not the reproductions."""
