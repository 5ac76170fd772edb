"""Demonstrations run by ``make run``."""
