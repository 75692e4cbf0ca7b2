"""Many reports: composition of amplified profiles, memoized longitudinal reports, and adapters to the
accountants users already have (layer 6, above ``amplification/``).

* :mod:`.reports`: :func:`amplify_reports`, T reports of one pipeline, memoized (one permanent draw) or
  fresh; :func:`memoized_steps`, the exact step operators of the memoized count channel.
* :mod:`.product_reports`: T reports of a product pipeline (RAPPOR, unary encodings) coordinate by coordinate,
  composed exactly by :mod:`.loss_atoms` (certified privacy loss atoms of product pairs, meet in the middle).
* :mod:`.composition`: :func:`compose`, the certified independent composition of profiles, reports, DP points
  and finite mechanisms through dp-accounting's privacy loss distributions.
* :mod:`.pld`: the bridge to dp-accounting (:func:`pair_to_pld`, :func:`profile_to_pld`,
  :func:`profile_from_pld`, :class:`PLDProfile`) and OpenDP (:func:`profile_to_opendp`).
"""

from .reports import *  # noqa: F401,F403
from .loss_atoms import *  # noqa: F401,F403
from .product_reports import *  # noqa: F401,F403
from .pld import *  # noqa: F401,F403
from .composition import *  # noqa: F401,F403
from . import composition, loss_atoms, pld, product_reports, reports

__all__ = (list(reports.__all__) + list(loss_atoms.__all__) + list(product_reports.__all__) + list(pld.__all__)
           + list(composition.__all__))
