"""Worker processes for independent jobs of one command (``zoo reproduce all``'s papers, ``zoo leaderboard``'s
splits): spawned (JAX's runtime does not survive a fork), each single-threaded.

Why single-threaded workers: on a few cores one single-threaded process per core finishes independent jobs sooner
than one process whose thread pools keep a second core busy only part of the time (compilation and the samplers'
small loops run on one thread). The user's own thread settings, when given, are kept.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os

__all__ = ["THREAD_VARIABLES", "single_threaded_env", "default_jobs", "spawned_pool", "set_environment",
           "restore_environment", "environment", "shared_compilation_cache"]

#: the environment variables that set the thread pools of BLAS/OpenMP and XLA
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")


def single_threaded_env(environ=os.environ) -> dict:
    """The variables a worker starts with: one BLAS/OpenMP thread and no Eigen pool in XLA, unless the user set
    them (then theirs)."""
    env = {name: "1" for name in THREAD_VARIABLES[:3] if name not in environ}
    flags = environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        env["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()
    return env


def set_environment(values) -> dict:
    """Set ``values`` (name -> str) in ``os.environ`` (processes started afterwards inherit them); returns what
    those names held before (None: unset), for ``restore_environment``."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    return saved


def restore_environment(saved: dict) -> None:
    """Undo ``set_environment``: each name back to its old value, or removed when it was unset."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextlib.contextmanager
def environment(values):
    """``os.environ`` with ``values`` set while the block runs, restored afterwards (also on an error)."""
    saved = set_environment(values)
    try:
        yield
    finally:
        restore_environment(saved)


def default_jobs(n_jobs: int, most: int = 4) -> int:
    """Workers for ``n_jobs`` independent jobs: one per core this process may use, at most ``most`` (each worker
    holds its own JAX runtime and compiled programs, about a GB) and at most ``n_jobs``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, most, n_jobs))


def _exit_with(parent_pid: int, every_s: float = 2.0) -> None:
    """In a worker: a daemon thread that ends this process when ``parent_pid`` is gone (a parent killed by a
    timeout or a signal to it alone leaves no orphan computing on)."""
    import threading
    import time

    def watch():
        while True:
            time.sleep(every_s)
            if os.getppid() != parent_pid:
                os._exit(1)
    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


#: compilations shorter than this many seconds are not written to the workers' shared compilation cache
SHARED_CACHE_MIN_COMPILE_S = 0.5


@contextlib.contextmanager
def shared_compilation_cache(environ=os.environ):
    """The environment of workers that share one JAX compilation cache on disk, new and empty for this command and
    removed when it ends: a program one worker compiled is read back by another that compiles the same program
    (the same HLO and options: e.g. two splits of equal shapes), and within a worker a program whose jit was
    created anew (a closure) is not compiled twice. Every command starts cold, so its times do not depend on an
    earlier run. A user's own ``JAX_COMPILATION_CACHE_DIR`` is kept (nothing is set or removed)."""
    if environ.get("JAX_COMPILATION_CACHE_DIR"):
        yield {}
        return
    import shutil
    import tempfile
    remove_orphaned_caches(tempfile.gettempdir())
    folder = tempfile.mkdtemp(prefix=f"{CACHE_PREFIX}{os.getpid()}-")
    try:
        yield {"JAX_COMPILATION_CACHE_DIR": folder,
               "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": str(SHARED_CACHE_MIN_COMPILE_S)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


#: the folder names of ``shared_compilation_cache``: this prefix, the command's process id, a random part
CACHE_PREFIX = "zoo-jax-cache-"


def remove_orphaned_caches(root, prefix: str = CACHE_PREFIX) -> None:
    """Remove the cache folders in ``root`` named ``<prefix><pid>-<random>`` whose process is gone (killed before it
    could remove its own, e.g. by a timeout's signal), never a live process's. ``prefix``: the zoo's worker pools'
    (``shared_compilation_cache``) by default; the test suite's run caches use their own."""
    import pathlib
    import shutil
    for folder in pathlib.Path(root).glob(f"{prefix}*-*"):
        pid = folder.name[len(prefix):].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:       # someone else's process
        return True
    return True


@contextlib.contextmanager
def spawned_pool(jobs: int):
    """A ``ProcessPoolExecutor`` of ``jobs`` spawned, single-threaded workers (``single_threaded_env`` is set while
    they start and this process's environment is restored afterwards) sharing one compilation cache for this pool's
    life (``shared_compilation_cache``); a worker ends when this process does."""
    with shared_compilation_cache() as cache, environment({**single_threaded_env(), **cache}), \
            concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                                   initializer=_exit_with, initargs=(os.getpid(),)) as pool:
        yield pool
