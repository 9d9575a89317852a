"""gustafson07's reference quantities read M in either layout: the kernel's state (chain, draw, K+1, p) with the
garbage row first, or the sites of zoo.fit and zoo.kernel ((chain, draw, p) for FS, (chain, draw, K, p) for CVFS)."""
import numpy as np

from zoo.data import AnnotatedRegions
from zoo.diagnostics.reference_problems import _label_quantities


def _data():
    X = np.arange(12.0).reshape(6, 2)
    return AnnotatedRegions(X=X, image_ids=np.array([0, 0, 1, 1, 2, 2]), keywords=[("a",), ("b",), ()],
                            vocabulary=["a", "b"], allow_unannotated=True)


def test_fs_and_cvfs_quantities_are_the_same_in_both_layouts():
    rng = np.random.default_rng(0)
    Y = rng.integers(0, 3, size=(2, 5, 6))
    state = rng.integers(0, 2, size=(2, 5, 3, 2))            # (chain, draw, K+1, p), row 0 the garbage concept
    fs_state = np.repeat(state[:, :, :1, :], 3, axis=2)      # FS: one mask shared by every row
    for variant, kernel_layout, site_layout in (("fs", fs_state, fs_state[:, :, 0, :]),
                                                ("cvfs", state, state[:, :, 1:, :])):
        quantities = _label_quantities(_data(), variant)
        a, b = quantities({"M": kernel_layout, "Y": Y}), quantities({"M": site_layout, "Y": Y})
        assert a.keys() == b.keys() and len(a) > 0
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
