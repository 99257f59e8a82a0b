"""What a watch's consumer has been told so far, to turn state-replacing batches into differences."""

from __future__ import annotations

from .types import BatchKind, Change, ChangeType, WatchBatch

# Enum members looked up once: reading them from their class costs more than the work per change.
_SNAPSHOT = BatchKind.SNAPSHOT
_RESYNC = BatchKind.RESYNC
_PUT = ChangeType.PUT


class WatchCursor:
    """The revision a watch's consumer is current with, and the ``mod_revision`` of every key it
    knows.

    A snapshot taken after a reconnect (the resume point was compacted, or syncd is behind the
    watch) and a resync from syncd (the connection fell behind) both carry every selected entry.
    The cursor turns each into the difference from what the consumer knew: a put for every key
    that is new or whose ``mod_revision`` changed, a delete for every key it knew that is gone,
    nothing for the rest. So the consumer sees one consistent sequence. This is the Swift client's
    ``WatchCursor``.
    """

    __slots__ = ("revision", "_mod_revisions")

    def __init__(self) -> None:
        #: The revision the consumer is current with; ``None`` before the first batch.
        self.revision: int | None = None
        self._mod_revisions: dict[str, int] = {}

    def absorb(self, batch: WatchBatch, is_first: bool) -> WatchBatch:
        """Takes in a batch from syncd; returns the batch to give the consumer."""
        kind, revision, changes, _, _ = batch
        mod_revisions = self._mod_revisions
        if kind is _SNAPSHOT and is_first:
            for _, entry, _ in changes:
                mod_revisions[entry.key] = entry.mod_revision
            result = batch
        elif kind is _SNAPSHOT or kind is _RESYNC:
            result = WatchBatch(BatchKind.RESYNC, revision, self._difference(batch))
        else:
            for change_type, entry, _ in changes:
                if change_type is _PUT:
                    mod_revisions[entry.key] = entry.mod_revision
                else:
                    mod_revisions.pop(entry.key, None)
            result = batch
        # A snapshot or resync is the whole state at its revision: taken even below the old one
        # (syncd's database went back), or the next resume would skip the revisions in between.
        if kind is _SNAPSHOT or kind is _RESYNC or self.revision is None or revision > self.revision:
            self.revision = revision
        return result

    def _difference(self, batch: WatchBatch) -> tuple[Change, ...]:
        following: dict[str, int] = {}
        changes: list[Change] = []
        known = self._mod_revisions
        for change in batch.changes:
            if change.type is not ChangeType.PUT:
                continue
            following[change.key] = change.entry.mod_revision
            if known.get(change.key) != change.entry.mod_revision:
                changes.append(change)
        for key in known:
            if key not in following:
                changes.append(Change.deletion(key, batch.revision))
        self._mod_revisions = following
        # Python orders strings by code point, which is the order of their UTF-8 bytes: syncd's.
        changes.sort(key=lambda change: change.entry.key)
        return tuple(changes)
