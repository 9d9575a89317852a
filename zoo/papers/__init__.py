"""Paper modules: each registers its models, methods and loaders with the zoo (imported by zoo.catalog)."""
