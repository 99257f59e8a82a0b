import NIOCore
import NIOEmbedded
import NIOPosix
import Synchronization
import Testing

@testable import SyncEngine
@testable import SyncServer

/// A round of delivery reaches each event loop with its work in the order it was added, nothing
/// runs before the loops do, and an emptied batch can be filled again; dispatched on a loop's own
/// thread, the work for that loop that may go first is left to the caller, and the rest queues.
@Suite struct DeliveryBatchTests {
    @Test func eachLoopRunsItsWorkInTheOrderItWasAdded() {
        let loops = [EmbeddedEventLoop(), EmbeddedEventLoop(), EmbeddedEventLoop()]
        let ran = Mutex<[String]>([])
        func note(_ name: String) -> @Sendable () -> Void { { ran.withLock { $0.append(name) } } }

        var batch = DeliveryBatch()
        #expect(batch.isEmpty)
        batch.add(on: loops[0], note("0a"))
        batch.add(on: loops[1], note("1a"))
        batch.add(on: loops[0], note("0b"))
        batch.add(on: loops[2], note("2a"))
        batch.add(on: loops[1], note("1b"))
        batch.addToEveryLoop(note("timing"))
        #expect(!batch.isEmpty)
        batch.dispatch()
        #expect(batch.isEmpty)
        #expect(ran.withLock { $0 }.isEmpty, "nothing runs before its loop does")

        loops[1].run()
        #expect(ran.withLock { $0 } == ["1a", "1b", "timing"])
        loops[0].run()
        loops[2].run()
        #expect(ran.withLock { $0 } == ["1a", "1b", "timing", "0a", "0b", "timing", "2a", "timing"])

        // Emptied by the dispatch: the next round starts afresh.
        batch.add(on: loops[2], note("again"))
        batch.dispatch()
        loops[0].run()
        loops[2].run()
        #expect(ran.withLock { $0 }.last == "again")
        #expect(ran.withLock { $0 }.count == 9)
    }

    @Test func onItsOwnLoopTheWorkThatMayGoFirstIsLeftToTheCallerAndTheRestQueues() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let (own, other) = (group.next(), group.next())
        #expect(own !== other)
        let ran = Mutex<[String]>([])
        @Sendable func note(_ name: String) -> @Sendable () -> Void { { ran.withLock { $0.append(name) } } }
        // The same closure goes to every loop: it says which one ran it.
        let timing: @Sendable () -> Void = { ran.withLock { $0.append(own.inEventLoop ? "timing own" : "timing other") } }

        // Expectations are checked here, not on the loop's thread, where they would not reach the test.
        let (wasEmptied, beforeRun, afterRun) = try await own.submit {
            var batch = DeliveryBatch()
            batch.add(on: own, mayGoFirst: true, note("own 1"))
            batch.add(on: own, note("own 2, behind the loop's queue"))
            batch.add(on: other, mayGoFirst: true, note("other"))
            batch.add(on: own, mayGoFirst: true, note("own 3"))
            batch.addToEveryLoop(timing)
            let kept = batch.dispatchKeepingOwnLoop()
            // The loop's own part waits for the caller; the queued part for the loop's next turn.
            let beforeRun = ran.withLock { $0 }.filter { $0.hasPrefix("own") }
            kept.run()
            return (batch.isEmpty, beforeRun, ran.withLock { $0 }.filter { $0.hasPrefix("own") })
        }.get()
        #expect(wasEmptied)
        #expect(beforeRun.isEmpty)
        #expect(afterRun == ["own 1", "own 3"])
        // Both loops have run their queued tasks once an empty task on each has.
        try await own.submit {}.get()
        try await other.submit {}.get()
        let all = ran.withLock { $0 }
        #expect(all.filter { $0.hasPrefix("own") } == ["own 1", "own 3", "own 2, behind the loop's queue"])
        #expect(all.filter { $0 == "other" }.count == 1)
        #expect(all.filter { $0 == "timing other" }.count == 1)
        // The timing goes last on its loop: after the part that queued there.
        #expect(all.firstIndex(of: "timing own").map { $0 > all.firstIndex(of: "own 2, behind the loop's queue")! } == true)

        // When all of the own loop's work may go first, its timing runs with it, at once.
        ran.withLock { $0.removeAll() }
        let ranAtOnce = try await own.submit {
            var batch = DeliveryBatch()
            batch.add(on: own, mayGoFirst: true, note("own"))
            batch.addToEveryLoop(timing)
            batch.dispatchKeepingOwnLoop().run()
            return ran.withLock { $0 }
        }.get()
        #expect(ranAtOnce == ["own", "timing own"])

        // Off every loop's thread, nothing is left to the caller.
        ran.withLock { $0.removeAll() }
        var batch = DeliveryBatch()
        batch.add(on: own, mayGoFirst: true, note("own"))
        let kept = batch.dispatchKeepingOwnLoop()
        try await own.submit {}.get()
        #expect(ran.withLock { $0 } == ["own"])
        kept.run()
        #expect(ran.withLock { $0 } == ["own"])
        try await group.shutdownGracefully()
    }
}
