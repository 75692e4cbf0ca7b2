"""BLAS threads for LAPACK calls that do not profit from them: :func:`single_blas_thread`.

The QR iteration behind ``numpy.linalg.eigvals`` (LAPACK ``dgeev`` / ``dhseqr``) is a long sequence of small
BLAS-1/2 updates; OpenBLAS splits each across its threads and synchronises after every one. On a machine
whose cores are shared (two cores, several processes) every synchronisation waits for a descheduled thread:
measured on the 2-core build machine at load 4, ``eigvals`` of a dense 1000 x 1000 chain took 3.5-9.1 s with
OpenBLAS's default two threads and 0.91 s with one. Large matrix products (BLAS-3) do profit from threads and
are left alone: only the eigenvalue calls are wrapped.

threadpoolctl (the joblib / scikit-learn project's library for exactly this) is imported on first use; without
it the context does nothing (the computation is the same, only slower under load).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["single_blas_thread"]


@contextlib.contextmanager
def single_blas_thread(active: bool = True) -> Iterator[None]:
    """Run the block with one BLAS thread (OpenBLAS, MKL, BLIS via threadpoolctl), then restore the setting.

    ``active=False`` (or threadpoolctl missing) runs the block unchanged. Results are the same either way up
    to the rounding order of the BLAS kernels; only the time changes.

    Examples
    --------
    >>> import numpy as np
    >>> with single_blas_thread():
    ...     vals = np.linalg.eigvals(np.array([[0.5, 0.5], [0.25, 0.75]]))
    >>> sorted(np.round(vals.real, 6).tolist())
    [0.25, 1.0]
    """
    if not active:
        yield
        return
    controller = _controller()
    if controller is None:  # pragma: no cover - an optional speed-up
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield


_CONTROLLER: list = []


def _controller():
    """One ``threadpoolctl.ThreadpoolController`` for the process (finding the loaded BLAS libraries costs a few
    ms per call otherwise), or None without threadpoolctl."""
    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - an optional speed-up
            _CONTROLLER.append(None)
        else:
            _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]
