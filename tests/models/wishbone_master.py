"""A Wishbone B4 master for Amaranth simulator testbenches: one classic or burst beat held
until ack or err, and an incrementing burst read."""

from __future__ import annotations

from amaranth import *

from macdma.hdl.cpu.wishbone import CTI_CLASSIC, CTI_END, CTI_INCREMENTING

TIMEOUT_CYCLES = 200


async def wishbone_cycle(ctx, bus, adr, *, we=0, data=0, sel=0xF, cti=CTI_CLASSIC):
    """One beat: hold the request until ack or err; return (data, err)."""
    ctx.set(bus.adr, adr)
    ctx.set(bus.we, we)
    ctx.set(bus.dat_w, data)
    ctx.set(bus.sel, sel)
    ctx.set(bus.cti, cti)
    ctx.set(bus.cyc, 1)
    ctx.set(bus.stb, 1)
    for _ in range(TIMEOUT_CYCLES):
        _, _, ack, err, dat_r = await ctx.tick().sample(bus.ack, bus.err, bus.dat_r)
        if ack or err:
            ctx.set(bus.cyc, 0)
            ctx.set(bus.stb, 0)
            return dat_r, err
    raise AssertionError(f"no ack for adr 0x{adr:x}")


async def burst_read(ctx, bus, first, beats):
    """An incrementing burst of ``beats`` words from word ``first``; (words, errors)."""
    words, errors = [], []
    for index in range(beats):
        cti = CTI_END if index == beats - 1 else CTI_INCREMENTING
        data, err = await wishbone_cycle(ctx, bus, first + index, cti=cti)
        words.append(data)
        errors.append(err)
    return words, errors
