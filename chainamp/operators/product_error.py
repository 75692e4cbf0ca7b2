"""The entrywise error of a stored operator against the exact one it stands for (:class:`ProductError`).

The result class of the product error model: :mod:`.products` (dense and sparse operators, and the public
``operator_error`` and ``multiply``, which dispatch on structure) and :mod:`.structured_products`
(structured operators, never densified) both return it, so it lives below both; the model itself is
derived in :mod:`.products`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["ProductError", "EXACT"]


@dataclass(frozen=True)
class ProductError:
    """Entrywise error of a stored operator against the exact one it stands for.

    ``true = stored (1 +- rel) +- absolute``; ``support_exact`` says the stored
    zeros are exactly the true zeros; ``min_positive`` is the smallest positive
    stored entry (for ratio bounds).
    """

    rel: float = 0.0
    absolute: float = 0.0
    support_exact: bool = True
    min_positive: float = 1.0

    @property
    def is_exact(self) -> bool:
        return self.rel == 0.0 and self.absolute == 0.0 and self.support_exact

    def ratio_error(self) -> float:
        """``e`` with ``true / stored in [1 - e, 1 + e]`` for every positive stored entry (inf if none)."""
        if self.absolute == 0.0:
            return self.rel
        if self.min_positive <= 0.0:
            return math.inf
        return self.rel + self.absolute / self.min_positive


EXACT = ProductError()
