"""Annotated images to regions (issue 7): registers the data loaders ``msrc_v2`` and ``photos``; no model.

Imported by ``zoo.catalog.ensure_loaded`` (which ``zoo.load_dataset`` calls), so the ``@register_loader``
decorators of ``zoo.data.msrc`` and ``zoo.data.photos`` run. Both modules import scikit-image lazily.
"""
import zoo.data.msrc  # noqa: F401
import zoo.data.photos  # noqa: F401
