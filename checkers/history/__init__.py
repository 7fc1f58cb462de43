"""Histories: the op model and the file formats it is stored in."""

from checkers.history.op import COMPLETIONS, OP_TYPES, Op

__all__ = ["COMPLETIONS", "OP_TYPES", "Op"]
