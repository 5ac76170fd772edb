"""Packet-level network simulator with integer (picosecond) time, built on the golden models."""
