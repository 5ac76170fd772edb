"""In-order scoreboard: expected transactions from the golden model, actual ones from a monitor."""

from __future__ import annotations

from collections import deque


class ScoreboardError(AssertionError):
    pass


class Scoreboard:
    """Compares actual against expected items in order; every mismatch fails at once with the
    transaction index and both values, and :meth:`assert_empty` proves nothing was left over."""

    def __init__(self, name: str, log=None, context=None):
        self.name = name
        self.expected: deque = deque()
        self.matched = 0
        self.log = log
        self.context = context  # callable giving extra text for a failure (e.g. last inputs)

    def expect(self, item) -> None:
        self.expected.append(item)

    def compare(self, actual) -> None:
        if not self.expected:
            raise ScoreboardError(f"{self.name}: unexpected item #{self.matched}: {actual}")
        expected = self.expected.popleft()
        if actual != expected:
            extra = f"\n{self.context()}" if self.context else ""
            raise ScoreboardError(f"{self.name}: item #{self.matched} differs\n"
                                  f"  expected {expected}\n  actual   {actual}{extra}")
        self.matched += 1

    def assert_empty(self) -> None:
        if self.expected:
            raise ScoreboardError(f"{self.name}: {len(self.expected)} expected item(s) never came;"
                                  f" first: {self.expected[0]}")
