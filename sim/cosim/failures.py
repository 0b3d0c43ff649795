"""What a failed simulation tells its user: the errors that are the user's to read (not a
bug in macdma) and the one message each becomes, with the path to the details."""

from __future__ import annotations

from pathlib import Path

from .runner import CocotbTestFailure, SimulatorBuildError
from .simulators import SimulatorNotFound

# What a simulation can fail with that is the user's to read, not a bug in macdma: each
# becomes one message (and the path to the details), never a traceback.
SIMULATION_ERRORS = (CocotbTestFailure, SimulatorBuildError, SimulatorNotFound)


def failure_message(command: str, error: Exception) -> str:
    """The one message a failed simulation prints: what failed, and where the details are."""
    text = error.summary if isinstance(error, CocotbTestFailure) else str(error)
    details = getattr(error, "details_path", None)
    if details is not None and Path(details).suffix == ".log":
        text += f"\nlog: {details} (the simulator's output)"
    elif details is not None:
        text += f"\ndetails: {details} (the simulator's output is above)"
    return f"macdma {command} failed: {text}"
