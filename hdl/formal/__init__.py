"""Formal properties of macdma's bus interfaces, DMA channels, IRQ and clock crossings.

Nothing here is elaborated into the simulated or synthesized designs: the property checkers
are Amaranth components that only observe a bus and state ``Assert`` / ``Assume`` /
``Cover`` about it, and :mod:`.proofs` puts each next to a real component in a harness that
``macdma.sim.flows.formal`` (``make formal``) converts to RTLIL and proves with SymbiYosys.
See docs/formal.md for every property in plain words.
"""
