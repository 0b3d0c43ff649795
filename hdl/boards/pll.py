"""``Ecp5Pll``: an ECP5 EHXPLLL making the board's clocks from its oscillator.

The divider search and the phase encoding follow Project Trellis' ``ecppll``: the primary
output CLKOP is fed back (``FEEDBK_PATH="CLKOP"``), its coarse phase is half its period in
VCO cycles, and a secondary output's phase adds whole VCO cycles (CPHASE) and eighths
(FPHASE) to that.
"""

from dataclasses import dataclass

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ClockOutput", "Ecp5Pll", "pll_dividers"]

VCO_HZ = (400e6, 800e6)
PFD_HZ = (3.125e6, 400e6)
SECONDARY_PORTS = ("CLKOS", "CLKOS2", "CLKOS3")


@dataclass(frozen=True)
class ClockOutput:
    """One PLL output: a domain name, its frequency and its phase in degrees."""

    domain: str
    freq_hz: float
    phase_deg: float = 0.0


def pll_dividers(clki_hz: float, outputs: list) -> dict:
    """EHXPLLL parameters producing every output exactly (raises ValueError otherwise).

    The first output must have phase 0 (it is the feedback clock)."""
    if not 1 <= len(outputs) <= 4:
        raise ValueError(f"an EHXPLLL has 1 to 4 outputs, not {len(outputs)}")
    primary, *secondary = outputs
    if primary.phase_deg != 0:
        raise ValueError(f"the first output {primary.domain!r} must have phase 0")
    for refclk_div in range(1, 129):
        pfd = clki_hz / refclk_div
        if not PFD_HZ[0] <= pfd <= PFD_HZ[1]:
            continue
        fb_div = primary.freq_hz / pfd
        if fb_div != int(fb_div) or not 1 <= fb_div <= 80:
            continue
        for op_div in range(1, 129):
            vco = primary.freq_hz * op_div
            if not VCO_HZ[0] <= vco <= VCO_HZ[1]:
                continue
            divs = [vco / out.freq_hz for out in secondary]
            if all(abs(div - round(div)) < 1e-6 and 1 <= round(div) <= 128 for div in divs):
                divs = [round(div) for div in divs]
                return _parameters(refclk_div, int(fb_div), op_div, vco, secondary, divs)
    raise ValueError(f"no EHXPLLL setting makes {outputs!r} from {clki_hz / 1e6} MHz")


def _parameters(refclk_div, fb_div, op_div, vco, secondary, divs):
    primary_cphase = op_div // 2  # ecppll: the primary is shifted by 180 degrees
    params = {
        "CLKI_DIV": refclk_div,
        "CLKFB_DIV": fb_div,
        "FEEDBK_PATH": "CLKOP",
        "CLKOP_ENABLE": "ENABLED",
        "CLKOP_DIV": op_div,
        "CLKOP_CPHASE": primary_cphase,
        "CLKOP_FPHASE": 0,
    }
    for port, out, div in zip(SECONDARY_PORTS, secondary, divs, strict=False):
        vco_cycles = out.phase_deg / 360 * int(div)
        cphase = int(vco_cycles)
        params.update(
            {
                f"{port}_ENABLE": "ENABLED",
                f"{port}_DIV": int(div),
                f"{port}_CPHASE": cphase + primary_cphase,
                f"{port}_FPHASE": int((vco_cycles - cphase) * 8),
            }
        )
    params["_vco_hz"] = vco
    return params


class Ecp5Pll(wiring.Component):
    """Members
    -------
    clki : In(1)
        The oscillator.
    locked : Out(1)
        The PLL's LOCK output (asynchronous).

    Each :class:`ClockOutput` drives ``ClockSignal(domain)``; the top creates the domains
    and their reset synchronisers.
    """

    clki: In(1)
    locked: Out(1)

    def __init__(self, clki_hz: float, outputs: list):
        self.clki_hz = clki_hz
        self.outputs = list(outputs)
        self.parameters = pll_dividers(clki_hz, self.outputs)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        params = {k: v for k, v in self.parameters.items() if not k.startswith("_")}
        primary, *secondary = self.outputs
        clkop = Signal()
        ports = {"o_CLKOP": clkop}
        attrs = {
            "FREQUENCY_PIN_CLKI": f"{self.clki_hz / 1e6:g}",
            "FREQUENCY_PIN_CLKOP": f"{primary.freq_hz / 1e6:g}",
            "ICP_CURRENT": "12",
            "LPF_RESISTOR": "8",
            "MFG_ENABLE_FILTEROPAMP": "1",
            "MFG_GMCREF_SEL": "2",
        }
        for port, out in zip(SECONDARY_PORTS, secondary, strict=False):
            ports[f"o_{port}"] = ClockSignal(out.domain)
            attrs[f"FREQUENCY_PIN_{port}"] = f"{out.freq_hz / 1e6:g}"
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_ICP_CURRENT=attrs.pop("ICP_CURRENT"),
            **{f"a_{k}": v for k, v in attrs.items()},
            **{f"p_{k}": v for k, v in params.items()},
            p_PLLRST_ENA="DISABLED",
            p_INTFB_WAKE="DISABLED",
            p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED",
            p_OUTDIVIDER_MUXA="DIVA",
            p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC",
            p_OUTDIVIDER_MUXD="DIVD",
            i_RST=0,
            i_STDBY=0,
            i_CLKI=self.clki,
            i_CLKFB=clkop,
            i_PHASESEL0=0,
            i_PHASESEL1=0,
            i_PHASEDIR=1,
            i_PHASESTEP=1,
            i_PHASELOADREG=1,
            i_PLLWAKESYNC=0,
            i_ENCLKOP=0,
            o_LOCK=self.locked,
            **ports,
        )
        m.d.comb += ClockSignal(primary.domain).eq(clkop)
        return m
