import NIOCore
import SharedStateWire

/// The frames a watch is sent, made from the daemon's values.
///
/// The engine and the hub decide what each watch is sent and when (under the engine's lock, so
/// that nothing overtakes a snapshot or a replay); this is where those decisions become protocol
/// bytes, so neither of them builds a protobuf message.
enum WatchFrames {
    /// What a run of entries read from the table stands for.
    enum EntriesKind: Sendable {
        /// The watch's first state.
        case snapshot
        /// The state that replaces what a backlogged watch missed.
        case resync
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
    static func entries(_ entries: [Entry], kind: EntriesKind, watchID: UInt64, revision: UInt64) -> ByteBuffer {
        event(
            watchID: watchID,
            kind: kind == .snapshot ? .snapshot : .resync,
            revision: revision,
            changes: entries.map { Change.put($0).wireValue }
        )
    }

    /// The changes of `revision` that a watch selects, when it selects only some of them (a watch
    /// that selects all of them is sent ``EncodedRevision/frame(forWatch:allocator:)``).
    static func changes(_ changes: [Sharedstate_V1_Change], of revision: EncodedRevision, watchID: UInt64) -> ByteBuffer {
        Frame.encode(
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

    /// The changes of `revision` that `watch` selects, each with the key's entry before it
    /// (``CommittedRevision/previous``; unknown when the revision was published without them).
    static func changesWithPrevious(of revision: CommittedRevision, selectedBy watch: WatchRegistry.Watch) -> ByteBuffer {
        var changes: [Sharedstate_V1_Change] = []
        for (index, change) in revision.changes.enumerated() where watch.selects(change.key) {
            var wireChange = change.wireValue
            (revision.previous?[index] ?? .unknown).wireFields(into: &wireChange)
            changes.append(wireChange)
        }
        return Self.changes(changes, of: revision.encoded, watchID: watch.id)
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
