"""Free stream producers for proof harnesses."""

from amaranth import *
from amaranth.hdl import Assume

__all__ = ["free_stream_source"]


def free_stream_source(harness, m: Module, stream, name: str) -> None:
    """Drive the ``In`` stream ``stream`` of a component from free inputs that follow the
    stream rules (the component's contract with its producer): ``valid`` low after reset,
    and once high it stays high, with the same payload, until ``ready``."""
    valid = harness.any_seq(1, f"{name}_valid")
    payload = harness.any_seq(len(Value.cast(stream.payload)), f"{name}_payload")
    m.d.comb += [stream.valid.eq(valid), stream.payload.eq(payload)]
    waiting = harness.past(valid & ~stream.ready, f"{name}_waiting")
    past_payload = harness.past(payload, f"{name}_payload")
    with m.If(~harness.started):
        m.d.comb += Assume(~valid)
    with m.If(harness.started & waiting):
        m.d.comb += Assume(valid & (payload == past_payload))
