import Foundation
import SyncClient
import Testing

/// A task that prefers a client's executor runs on the thread that reads the client's socket:
/// answers and watch batches resume it there, and it stays there across a reconnection.
@Suite(.timeLimit(.minutes(2))) struct ClientExecutorTests {
    @Test func callsAndAWatchResumeATaskPreferringTheClientsExecutorOnTheThreadThatReadsItsSocket() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "executor"))
        let writer = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "writer"))

        let afterCalls = try await Task(executorPreference: client.executor) {
            var onReadingThread: [Bool] = []
            for index in 0..<20 {
                try await client.put("e/\(index)", json: "\(index)")
                onReadingThread.append(client.readsOnThisThread)
                _ = try await client.get("e/\(index)")
                onReadingThread.append(client.readsOnThisThread)
            }
            return onReadingThread
        }.value
        #expect(afterCalls == Array(repeating: true, count: 40))

        // Without the preference a nonisolated task is resumed on Swift's global executor.
        let withoutPreference = try await Task.detached {
            try await client.put("e/detached", json: "0")
            return client.readsOnThisThread
        }.value
        #expect(!withoutPreference)

        let watching = Task(executorPreference: client.executor) {
            var revisions: [UInt64] = []
            var onReadingThread: [Bool] = []
            for try await batch in client.watch(prefixes: ["w/"]) where batch.kind == .changes {
                revisions.append(batch.revision)
                onReadingThread.append(client.readsOnThisThread)
                if revisions.count == 10 { break }
            }
            return (revisions, onReadingThread)
        }
        try await waitForWatches(1, scratch: scratch)
        var written: [UInt64] = []
        for index in 0..<5 { written.append(try await writer.put("w/\(index)", json: "\(index)").revision) }

        // A reconnection keeps the client on the same thread.
        try await daemon.stop()
        try await eventually("the client to notice") { client.connectionState == .reconnecting }
        daemon = try await DaemonProcess(scratch)
        try await eventually("the client to reconnect") { client.connectionState == .connected }
        let again = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "writer"))
        for index in 5..<10 { written.append(try await again.put("w/\(index)", json: "\(index)").revision) }

        let (revisions, onReadingThread) = try await watching.value
        #expect(revisions == written)
        #expect(onReadingThread == Array(repeating: true, count: 10))

        await again.close()
        await writer.close()
        await client.close()
        try await daemon.stop()
    }

    /// `client.clock` sleeps on a timer of the client's loop: a task preferring the client's
    /// executor wakes on the thread that reads its socket, no earlier than the deadline, and a
    /// cancelled sleep throws at once.
    @Test func theClientsClockWakesATaskPreferringItsExecutorOnTheReadingThread() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "clock"))
        let clock = client.clock

        let woken = try await Task(executorPreference: client.executor) {
            var woken: [(onReadingThread: Bool, late: Bool)] = []
            for milliseconds in [1, 5, 20] {
                let deadline = clock.now.advanced(by: .milliseconds(milliseconds))
                try await clock.sleep(until: deadline)
                woken.append((client.readsOnThisThread, clock.now >= deadline))
            }
            // A deadline already passed returns at once.
            try await clock.sleep(until: clock.now.advanced(by: .seconds(-1)))
            return woken
        }.value
        #expect(woken.map(\.onReadingThread) == [true, true, true])
        #expect(woken.map(\.late) == [true, true, true])

        // From a task without the preference it sleeps on the loop too and resumes where it was.
        let deadline = clock.now.advanced(by: .milliseconds(5))
        try await Task.detached { try await clock.sleep(until: deadline) }.value
        #expect(clock.now >= deadline)

        let sleeper = Task(executorPreference: client.executor) { try await clock.sleep(until: .now.advanced(by: .seconds(30))) }
        try await Task.sleep(for: .milliseconds(20))
        sleeper.cancel()
        let started = ContinuousClock.now
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(ContinuousClock.now - started < .seconds(10))

        await client.close()
        try await daemon.stop()
    }
}
