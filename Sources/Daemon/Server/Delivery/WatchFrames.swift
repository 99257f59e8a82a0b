import NIOCore
import SharedStateWire
import SyncEngine

/// The frames a watch is sent, made from the engine's ``WatchMessage``s.
///
/// The engine decides what each watch is sent and when (in one order, so that nothing overtakes
/// a snapshot or a replay); this is where those decisions become protocol bytes.
package enum WatchFrames {
    /// The frame of `message` for watch `watchID`; a message about changes names a revision of
    /// `revisions` (its round's).
    static func frame(of message: WatchMessage, watchID: UInt64, revisions: [CommittedRevision]) -> ByteBuffer {
        switch message {
        case .started(let revision):
            response(watchID: watchID, revision: revision)
        case .entries(let entries, let kind, let revision):
            self.entries(entries, kind: kind, watchID: watchID, revision: revision)
        case .changes(let index, nil, false):
            // All of them: the revision's encoded event serves as it is.
            revisions[index].frame(forWatch: watchID, allocator: allocator)
        case .changes(let index, let selected, let withPrevious):
            changes(of: revisions[index], at: selected, withPrevious: withPrevious, watchID: watchID)
        case .progress(let revision):
            progress(watchID: watchID, revision: revision)
        case .ended(let revision, let error):
            ended(watchID: watchID, revision: revision, error: error)
        }
    }

    /// The response to a watch request: the watch starts after `revision`.
    static func response(watchID: UInt64, revision: UInt64) -> ByteBuffer {
        Frame.encode(
            Sharedstate_V1_ServerFrame.with {
                $0.response = .with {
                    $0.id = watchID
                    $0.watch = .with {
                        $0.watchID = watchID
                        $0.revision = revision
                    }
                }
            }
        )
    }

    /// A snapshot or resync: `entries` as puts at `revision`.
    static func entries(_ entries: [Entry], kind: WatchMessage.EntriesKind, watchID: UInt64, revision: UInt64) -> ByteBuffer {
        event(
            watchID: watchID,
            kind: kind == .snapshot ? .snapshot : .resync,
            revision: revision,
            changes: entries.map { Change.put($0).wireValue }
        )
    }

    /// The changes of `revision` at `indices` (all with nil), each with the key's entry before it
    /// when `withPrevious` (``CommittedRevision/previous``; unknown when the revision was published
    /// without them). A watch that takes all of the changes without previous entries is sent
    /// ``CommittedRevision/frame(forWatch:allocator:)`` instead, which encodes nothing again.
    static func changes(of revision: CommittedRevision, at indices: [Int]?, withPrevious: Bool, watchID: UInt64) -> ByteBuffer {
        let changes = (indices ?? Array(revision.changes.indices)).map { index in
            var change = revision.changes[index].wireValue
            if withPrevious { (revision.previous?[index] ?? .unknown).wireFields(into: &change) }
            return change
        }
        return Frame.encode(
            Sharedstate_V1_ServerFrame.with {
                $0.event = .with {
                    $0.watchID = watchID
                    $0.kind = .changes
                    $0.revision = revision.revision
                    $0.changes = changes
                    $0.writerSession = revision.writerSession
                    $0.cause = revision.cause
                }
            }
        )
    }

    /// A progress notice: the watch is current with `revision`.
    static func progress(watchID: UInt64, revision: UInt64) -> ByteBuffer {
        event(watchID: watchID, kind: .progress, revision: revision, changes: [])
    }

    /// The end of a watch that may not go on, with the reason.
    static func ended(watchID: UInt64, revision: UInt64, error: SharedStateError) -> ByteBuffer {
        Frame.encode(
            Sharedstate_V1_ServerFrame.with {
                $0.event = .with {
                    $0.watchID = watchID
                    $0.kind = .ended
                    $0.revision = revision
                    $0.error = error.wireValue
                }
            }
        )
    }

    private static func event(
        watchID: UInt64,
        kind: Sharedstate_V1_EventKind,
        revision: UInt64,
        changes: [Sharedstate_V1_Change]
    ) -> ByteBuffer {
        Frame.encode(
            Sharedstate_V1_ServerFrame.with {
                $0.event = .with {
                    $0.watchID = watchID
                    $0.kind = kind
                    $0.revision = revision
                    $0.changes = changes
                }
            }
        )
    }

    /// The allocator of the frames built for every watcher of a revision.
    static let allocator = ByteBufferAllocator()
}

package extension CommittedRevision {
    /// The frame telling watch `watchID` about every change of this revision, built from its
    /// encoded record (``logRecord``) without encoding it again (``WatchEventFrame``).
    func frame(forWatch watchID: UInt64, allocator: ByteBufferAllocator) -> ByteBuffer {
        WatchEventFrame.frame(watchID: watchID, record: logRecord, allocator: allocator)
    }
}
