import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import SyncEngine

/// A round of delivery reaches each event loop with its work in the order it was added, nothing
/// runs before the loops do, and an emptied batch can be filled again.
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
}
