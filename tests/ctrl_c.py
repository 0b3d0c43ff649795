"""Starting a command as from a terminal, for the tests that press Ctrl-C.

A process started from a non-interactive shell's background job (a CI runner's, say)
inherits SIGINT ignored, and Python keeps it ignored: Ctrl-C then does nothing, as it
should for such a job (``macdma run`` simulated on for minutes in one such run of the
suite). These tests are about a user's Ctrl-C, so their command starts with SIGINT at its
default action whatever the test process has.
"""

import sys

_WITH_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def python_with_default_sigint(*args: str) -> list[str]:
    """``python *args`` with SIGINT at its default action."""
    return [sys.executable, "-c", _WITH_DEFAULT_SIGINT, *args]
