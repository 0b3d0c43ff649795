"""Simulation only: a GMII/MII wire that moves whole frames (issue 38).

A :class:`~.player.FramePlayer` drives a receive pin group from a frame that a bench
wrote into its memory; a :class:`~.recorder.FrameRecorder` captures a transmit pin group
into its memory and stamps each frame. Both do in the simulator, clock for clock, what
cocotbext-eth's ``GmiiSource`` and ``GmiiSink`` do in Python, so a bench wakes once per
frame instead of once per byte clock (sim/benches/frame_wire.py is their bench side).
They sit only in the simulation tops of :mod:`.tops`, never in a board design.
"""
