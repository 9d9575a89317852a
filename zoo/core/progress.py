"""Progress bars of the user layer: the kernels and loops of ``zoo.inference`` report progress through a callback
argument (``progress(n_done, *extra)``: ``driver.sample_chunked``, ``driver.optimize_chunked``,
``variational_em.run_variational_em``, ``sharding.run_variational_em_sharded``); the paper modules make that
callback here, one way for every method, so ``zoo.inference`` never imports tqdm."""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Optional

__all__ = ["progress_callback"]


@contextlib.contextmanager
def progress_callback(total: int, desc: str, enabled: bool = True,
                      postfix: Optional[Callable[..., dict]] = None) -> Iterator[Callable[..., None]]:
    """A tqdm bar of ``total`` steps, closed on exit, and the callback ``progress(n_done, *extra)`` that moves it
    by ``n_done``; ``postfix(*extra)`` (e.g. the objective a driver passes along) gives the values shown beside the
    bar. With ``enabled=False`` no bar is drawn and the callback does nothing."""
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=desc, disable=not enabled, leave=False) as bar:
        def progress(n_done: int, *extra) -> None:
            bar.update(n_done)
            if postfix is not None and enabled:
                bar.set_postfix(postfix(*extra))
        yield progress
