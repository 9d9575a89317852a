"""Data containers, loaders and synthetic generators of the zoo."""
from zoo.data.containers import AnnotatedRegions, Bags, Matrix, MultimodalCounts, check_features
from zoo.data.container_files import load_container, read_data_file, save_container
from zoo.data.location import (DatasetInfo, data_root, dataset_path, dataset_status, datasets, list_datasets,
                               load_dataset, register_loader)

__all__ = ["AnnotatedRegions", "Bags", "DatasetInfo", "Matrix", "MultimodalCounts", "check_features", "data_root",
           "dataset_path", "dataset_status", "datasets", "list_datasets", "load_container", "load_dataset",
           "read_data_file", "read_table", "register_loader", "save_container"]

from zoo.data.tables import read_table  # noqa: E402


def __getattr__(name: str):
    """``zoo.data.<module>`` without importing it first (e.g. ``zoo.data.corel5k.simulate_multimodal``)."""
    import importlib
    import importlib.util
    if importlib.util.find_spec(f"zoo.data.{name}") is not None:
        return importlib.import_module(f"zoo.data.{name}")
    raise AttributeError(f"module 'zoo.data' has no attribute {name!r}")
