"""Expecting a component's constructor to reject its parameters."""

import gc
import traceback
import warnings
from contextlib import contextmanager

import pytest
from amaranth.hdl import Fragment, UnusedElaboratable


@contextmanager
def rejected(exception: type[BaseException], match: str):
    """``pytest.raises`` for a component's constructor.

    The half-built component is garbage that Amaranth warns about ("created but never
    used") when it is collected; that warning, and only it, is expected here. The
    traceback's frames still hold the object, so they are cleared and the object is
    collected inside the block, where the warning is ignored.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(exception, match=match) as info:
            yield
        traceback.clear_frames(info.tb)
        del info
        gc.collect()


def elaborate(*components) -> None:
    """Elaborate components a test built only to inspect (signatures, ports), as a build
    would: it checks they elaborate, and Amaranth then counts them as used."""
    for component in components:
        Fragment.get(component, None)
