"""Shuffled reports (layer 7): the central privacy of n users' local reports after a shuffler."""
from .exact import *  # noqa: F401,F403
from . import exact

__all__ = list(exact.__all__)
