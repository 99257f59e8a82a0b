import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Named places in the commit path where a test can make syncd die, as etcd's gofail failpoints
/// do: armed by `SYNCD_FAILPOINTS` in debug builds only (a release build compiles every
/// ``hit(_:)`` away).
///
/// `SYNCD_FAILPOINTS=journal-after-append=kill@100,move-after-commit=kill` arms two: the first
/// kills syncd with SIGKILL the 100th time it is reached, the second the first time.
/// `sleep(MS)` instead of `kill` pauses the thread that reaches it.
package enum Failpoint: String, CaseIterable, Sendable {
    /// A commit group about to be appended to the journal.
    case journalBeforeAppend = "journal-before-append"
    /// A group appended, not yet answered.
    case journalAfterAppend = "journal-after-append"
    /// A move into the database inside its transaction, rows inserted, not yet committed.
    case moveInTransaction = "move-in-transaction"
    /// A move committed in the database; the journal not yet replaced.
    case moveAfterCommit = "move-after-commit"
    /// The new journal written and synced beside the old one, not yet renamed over it.
    case journalDuringReplace = "journal-during-replace"
    /// Compaction's mark committed, one of its chunks of the change log about to be deleted.
    case compactionBeforeDelete = "compaction-before-delete"

    /// Reaching the failpoint: does what `SYNCD_FAILPOINTS` armed it to do, if anything.
    @inline(__always)
    package func hit() {
        #if FAILPOINTS
            Self.armed[self]?.reached()
        #endif
    }

    #if FAILPOINTS
        /// What an armed failpoint does, and when.
        final class Action: Sendable {
            enum Kind {
                case kill
                case sleep(milliseconds: UInt32)
            }

            let kind: Kind
            let onHit: Int
            private let hits = Mutex(0)

            init(kind: Kind, onHit: Int) {
                self.kind = kind
                self.onHit = onHit
            }

            func reached() {
                let count = hits.withLock { hits in
                    hits += 1
                    return hits
                }
                switch kind {
                case .kill:
                    if count == onHit { raise(SIGKILL) }
                case .sleep(let milliseconds):
                    if count >= onHit { usleep(milliseconds * 1000) }
                }
            }
        }

        /// The failpoints `SYNCD_FAILPOINTS` arms, read once.
        static let armed: [Failpoint: Action] = {
            guard let text = ProcessInfo.processInfo.environment["SYNCD_FAILPOINTS"] else { return [:] }
            var armed: [Failpoint: Action] = [:]
            for item in text.split(separator: ",") {
                let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let point = Failpoint(rawValue: parts[0]) else {
                    FileHandle.standardError.write(Data("syncd: SYNCD_FAILPOINTS: unknown failpoint in \(item)\n".utf8))
                    continue
                }
                let action = parts[1].split(separator: "@", maxSplits: 1).map(String.init)
                let onHit = action.count == 2 ? Int(action[1]) ?? 1 : 1
                if action[0] == "kill" {
                    armed[point] = Action(kind: .kill, onHit: onHit)
                } else if action[0].hasPrefix("sleep("), action[0].hasSuffix(")"),
                    let milliseconds = UInt32(action[0].dropFirst(6).dropLast())
                {
                    armed[point] = Action(kind: .sleep(milliseconds: milliseconds), onHit: onHit)
                } else {
                    FileHandle.standardError.write(Data("syncd: SYNCD_FAILPOINTS: unknown action in \(item)\n".utf8))
                }
            }
            return armed
        }()
    #endif
}
