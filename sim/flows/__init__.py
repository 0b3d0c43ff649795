"""Flows that are not simulation: synthesis and place-and-route, formal proofs, and the
register-map generator."""
