"""Errors and warnings of the configuration room."""
from __future__ import annotations


class ProfilingOptionsError(ValueError):
    """Bad profiling input: names the key (or variable/file), the bad value and what is allowed.

    A ValueError so existing `except ValueError` handlers in training scripts keep working.
    """


class ProfilingDeprecationWarning(FutureWarning):
    """A legacy spelling was accepted; the message names the modern one.

    A FutureWarning (shown by default), because these notes are for the person
    running the script, not only for library developers.
    """


class EstimatorUnavailableError(ImportError):
    """tf.estimator is gone (TensorFlow 2.16+), but an Estimator-only API was used."""
