"""One exception hierarchy for chainamp.

Every error the library raises on purpose derives from :class:`ChainampError`.
Errors about a bad *value* also derive from :class:`ValueError`, so code that
already catches ``ValueError`` keeps working; a bad *type* raises the built-in
:class:`TypeError`.
"""

from __future__ import annotations

__all__ = [
    "ChainampError",
    "InvalidOperatorError",
    "IncompatibleOperatorsError",
    "InvalidParameterError",
    "InvalidDistributionError",
    "InvalidMechanismError",
    "InvalidPipelineError",
    "SolverError",
    "ResourceLimitError",
]


class ChainampError(Exception):
    """Base class of every error chainamp raises on purpose."""


class InvalidOperatorError(ChainampError, ValueError):
    """A matrix is not a valid Markov operator (shape, entries or row sums)."""


class IncompatibleOperatorsError(ChainampError, ValueError):
    """Two operators cannot be composed, or an operator does not fit a mechanism."""


class InvalidParameterError(ChainampError, ValueError):
    """A scalar parameter (epsilon, delta, gamma, alpha, t, ...) is out of range."""


class InvalidDistributionError(ChainampError, ValueError):
    """A probability vector or coupling is not valid."""


class InvalidMechanismError(ChainampError, ValueError):
    """An input mechanism (privacy profile, neighbour relation, ...) is not valid."""


class InvalidPipelineError(ChainampError, ValueError):
    """A pipeline file is malformed or inconsistent."""


class SolverError(ChainampError, RuntimeError):
    """A convex solver did not return an OPTIMAL status; its answer is not trusted."""


class ResourceLimitError(ChainampError, MemoryError):
    """A computation would need more memory (or work) than the limit allows.

    Raised *before* allocating, with the estimate, the operation and how to go past it
    (a ``memory_limit=`` keyword, :func:`chainamp.resource_limits`, or the CLI's
    ``--memory-limit``). It subclasses :class:`MemoryError`, so code that already
    handles running out of memory handles it too.
    """
