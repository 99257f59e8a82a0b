import SharedStateWire

/// Counting the keys under a prefix (`count`), without reading their entries.
package extension StateEngine {
    /// The result of ``count(prefix:readable:)``.
    struct Counting: Sendable, Equatable {
        package var count: Int
        package var revision: UInt64
    }

    /// What ``count(prefix:readable:)`` found.
    enum CountOutcome: Sendable {
        case counted(Counting)
        /// Too many keys to judge one by one under the lock: count them with
        /// ``LargeCount/count()``, off the event loop.
        case tooLarge(LargeCount)
    }

    /// A count that judges too many keys to do on the event loop: ``count()`` counts them in a
    /// copy of the key order taken when it was asked for, at the revision of that moment.
    struct LargeCount: Sendable {
        let order: KeyOrder
        let revision: UInt64
        let prefix: String
        let readable: KeyFilter

        /// Counts the keys `readable` lets through: it takes time, so call it off the event loop.
        package func count() -> Counting {
            var count = 0
            order.forEach(withPrefix: prefix) { entry in
                if readable(entry.key) { count += 1 }
                return true
            }
            return Counting(count: count, revision: revision)
        }
    }

    /// How many keys start with `prefix`, of those `readable` lets through (all with nil), and
    /// the revision they were counted at.
    ///
    /// Without a filter it costs two searches in the key order, whatever the count. With one,
    /// each key is judged: at once for up to ``Configuration/entriesReadInPlace`` keys, else in a
    /// ``LargeCount`` to run elsewhere.
    func count(prefix: String, readable: KeyFilter? = nil) -> CountOutcome {
        published.withLock { state in
            let order = state.entries.order
            let all = order.count(withPrefix: prefix)
            guard let readable else { return .counted(Counting(count: all, revision: state.revision)) }
            let large = LargeCount(order: order, revision: state.revision, prefix: prefix, readable: readable)
            return all <= configuration.entriesReadInPlace ? .counted(large.count()) : .tooLarge(large)
        }
    }
}
