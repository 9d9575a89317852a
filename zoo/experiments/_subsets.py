"""What ``--fast`` runs on real data: small subsets, and never a segmentation of all 591 MSRC-v2 images."""
from __future__ import annotations


def fast_segmentation() -> str:
    """"ncut" (the papers' segmentation) when its regions are already cached, else "slic" (seconds to compute):
    --fast must not start the NCut segmentation of every image (tens of minutes)."""
    from zoo.data import msrc
    try:
        return "ncut" if msrc.is_cached("ncut") else "slic"
    except FileNotFoundError:
        return "slic"
