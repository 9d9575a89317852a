"""Data containers, loaders and synthetic generators of the zoo."""
from zoo.data.containers import AnnotatedRegions, Bags, Matrix, MultimodalCounts, check_features
from zoo.data.location import (DatasetInfo, data_root, dataset_path, dataset_status, datasets, list_datasets,
                               load_dataset, register_loader)

__all__ = ["AnnotatedRegions", "Bags", "DatasetInfo", "Matrix", "MultimodalCounts", "check_features", "data_root",
           "dataset_path", "dataset_status", "datasets", "list_datasets", "load_dataset", "register_loader"]
