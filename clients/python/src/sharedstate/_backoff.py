"""The waits between attempts to reach syncd again."""

from __future__ import annotations

import random
from collections.abc import Callable


class Backoff:
    """Delays doubling from ``initial`` up to ``maximum``, each with jitter: half of the step is
    fixed and half random, so clients that lost syncd together do not all knock again at the same
    instant when it comes back. The Swift client's ``Backoff`` follows the same rule."""

    def __init__(self, initial: float, maximum: float, uniform: Callable[[], float] = random.random) -> None:
        self._current = min(initial, maximum)
        self._maximum = maximum
        self._uniform = uniform

    def next(self) -> float:
        """The next delay in seconds: between half the current step and all of it. The step then
        doubles, up to the maximum."""
        step = self._current
        self._current = min(step * 2, self._maximum)
        half = step / 2
        return half + self._uniform() * half
