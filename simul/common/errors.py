"""The one domain exception: every expected failure becomes a SimulError with a message a user can act on."""


class SimulError(Exception):
    """An error caused by input or environment, reported to the user without a traceback.

    The message says what was wrong, where (file and line when there is one) and what to do.
    """


class UsageError(SimulError):
    """Options that do not fit together; the CLI exits with code 2."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into the same orderly stop as Ctrl-C (see :func:`simul.cli.common.handle_errors`)."""
