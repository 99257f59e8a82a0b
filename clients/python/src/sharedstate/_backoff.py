"""The waits between attempts to reach syncd again."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from .errors import Conflict

#: How long ``update()`` keeps trying to win its race, in seconds, unless told otherwise.
DEFAULT_UPDATE_TIMEOUT = 10.0


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


class UpdateAttempts:
    """How ``update()`` spaces its attempts after lost races: a jittered wait that doubles from
    ``initial`` up to ``maximum`` (see :class:`Backoff`), so that writers contending for one key
    stop meeting in lockstep, until ``timeout`` seconds have passed since the first attempt, or
    ``max_attempts`` attempts were made when that is given."""

    #: The first wait after a lost race, and the longest, in seconds.
    INITIAL_WAIT = 0.001
    MAXIMUM_WAIT = 0.1

    def __init__(
        self,
        key: str,
        timeout: float,
        max_attempts: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        uniform: Callable[[], float] = random.random,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"update's timeout must be a positive number of seconds, not {timeout!r}")
        if max_attempts is not None and max_attempts < 1:
            raise ValueError(f"update's max_attempts must be at least 1, not {max_attempts!r}")
        self._key = key
        self._clock = clock
        self._started = clock()
        self._deadline = self._started + timeout
        self._max_attempts = max_attempts
        self._backoff = Backoff(self.INITIAL_WAIT, self.MAXIMUM_WAIT, uniform)
        self.attempts = 0

    def lost(self) -> float:
        """Counts an attempt that lost its race; returns how long to wait before the next, or
        raises :class:`~sharedstate.Conflict` when no attempt is left in the time or the count."""
        self.attempts += 1
        wait = self._backoff.next()
        now = self._clock()
        if self._max_attempts is not None and self.attempts >= self._max_attempts:
            raise self._gave_up(now)
        if now + wait > self._deadline:
            raise self._gave_up(now)
        return wait

    def _gave_up(self, now: float) -> Conflict:
        return Conflict(
            f'key "{self._key}" kept changing; gave up after {self.attempts} attempts '
            f"in {now - self._started:.3f} s"
        )
