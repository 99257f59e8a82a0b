import NIOCore
import SyncEngine

/// The writes one event loop read in one turn, from every connection it serves, handed to the
/// engine together once the turn's reads are done: one commit group per turn, as Redis executes
/// every command a turn read before it writes its log and its replies.
///
/// The first connection to add writes in a turn schedules the hand-over as a task of its loop,
/// which NIO runs after the turn's reads. The engine then commits the group on this thread when no
/// other commit runs, so that the common write takes no hop to another thread and back (see
/// ``StateEngine/submit(_:mayCommitHere:)``), and the answers and events for this loop's
/// connections are written in the same task (see ``DeliveryBatch/dispatchKeepingOwnLoop()``).
///
/// `@unchecked Sendable`: its state is only touched on its event loop.
final class TurnWrites: @unchecked Sendable {
    private let eventLoop: any EventLoop
    private let engine: StateEngine
    private var writes: [PendingWrite] = []
    private var isScheduled = false

    init(eventLoop: any EventLoop, engine: StateEngine) {
        self.eventLoop = eventLoop
        self.engine = engine
    }

    /// Moves a connection's writes, in order, into the turn's group, leaving `queued` empty with
    /// room for the next; on the loop only.
    func add(_ queued: inout [PendingWrite]) {
        eventLoop.assertInEventLoop()
        if writes.isEmpty {
            // The usual turn reads one connection: its array is taken as it is.
            swap(&writes, &queued)
        } else {
            writes.append(contentsOf: queued)
            queued.removeAll(keepingCapacity: true)
        }
        guard !isScheduled else { return }
        isScheduled = true
        eventLoop.execute { self.handOver() }
    }

    private func handOver() {
        isScheduled = false
        var group: [PendingWrite] = []
        swap(&group, &writes)
        guard !group.isEmpty else { return }
        engine.submit(group, mayCommitHere: true)
        // Committed here, the group is this array's only holder again: its room serves the next.
        group.removeAll(keepingCapacity: true)
        if writes.isEmpty { writes = group }
    }

    /// One group per event loop of `group`, found by the loop a channel runs on.
    struct PerLoop: Sendable {
        private let turns: [ObjectIdentifier: TurnWrites]
        private let engine: StateEngine

        init(_ group: any EventLoopGroup, engine: StateEngine) {
            var turns: [ObjectIdentifier: TurnWrites] = [:]
            for loop in group.makeIterator() { turns[ObjectIdentifier(loop)] = TurnWrites(eventLoop: loop, engine: engine) }
            self.turns = turns
            self.engine = engine
        }

        /// The group of `loop`; one of its own for a loop not of the group.
        func of(_ loop: any EventLoop) -> TurnWrites {
            turns[ObjectIdentifier(loop)] ?? TurnWrites(eventLoop: loop, engine: engine)
        }
    }
}
