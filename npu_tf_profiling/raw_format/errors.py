"""What readers of the raw files raise and warn.

Both live in the raw-format room because the decoders here use them, and the
reports re-export them: a caller can catch a bad record or filter skipped-data
warnings without knowing which reader ran.
"""


class BadRecordError(ValueError):
    """A raw record (a training_trace line, a task_trace header) that does not follow the contract."""


class RawDataWarning(UserWarning):
    """Raw data had to be partly skipped or reinterpreted (torn line, bad record...).

    A dedicated category lets tests and callers filter or escalate exactly these.
    """


class ForeignFileError(OSError):
    """A name the package would write is a file it did not create (a symlink, a FIFO, ...): refused.

    An OSError, so every writer's "one warning, training goes on" handling applies;
    the message names the path and what it is (``own_files``).
    """

    def __str__(self) -> str:
        return str(self.strerror)
