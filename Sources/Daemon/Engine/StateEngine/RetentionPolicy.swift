/// How much of the change log syncd keeps: at most a number of revisions, and revisions no older
/// than an age. A pure value: the engine feeds it the current revision now and then and compacts
/// through the revision it names.
///
/// Ages are judged from samples of (time, revision) taken while syncd runs, so revisions from
/// before a restart count as committed at start-up: they are kept longer, never shorter.
package struct RetentionPolicy: Sendable {
    /// Keep at most this many revisions; 0 keeps any number.
    var maxRevisions: UInt64
    /// Keep revisions younger than this; nil keeps any age.
    var maxAge: Duration?

    private var samples: [(at: ContinuousClock.Instant, revision: UInt64)] = []

    init(maxRevisions: UInt64, maxAge: Duration?) {
        self.maxRevisions = maxRevisions
        self.maxAge = maxAge
    }

    /// Notes that `revision` was current at `now`; returns the revision to compact through, if
    /// the log holds more than the policy keeps.
    mutating func compactionTarget(revision: UInt64, compacted: UInt64, now: ContinuousClock.Instant) -> UInt64? {
        var target: UInt64 = 0
        if maxRevisions > 0, revision > maxRevisions {
            let byCount = revision - maxRevisions
            // In steps of a tenth of the kept count, not on every commit.
            if byCount >= compacted + max(1, maxRevisions / 10) { target = byCount }
        }
        if let maxAge {
            if samples.last?.revision != revision { samples.append((now, revision)) }
            let cutoff = now - maxAge
            // Every revision up to the newest sample taken before the cutoff is older than maxAge.
            if let index = samples.lastIndex(where: { $0.at <= cutoff }) {
                target = max(target, samples[index].revision)
                samples.removeFirst(index)
            }
        }
        return target > compacted ? min(target, revision) : nil
    }
}
