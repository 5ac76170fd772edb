"""Demonstrations run by ``make demo``: the marker sweep and the DCTCP sawtooth."""
