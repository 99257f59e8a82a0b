import Foundation
import SyncClient
import Testing

@Suite(.timeLimit(.minutes(2))) struct WatchAgreementTests {
    /// With one event loop every connection shares it; with four, the writer's and the watchers'
    /// connections are on different loops, and each revision is handed from one to the others.
    @Test(arguments: [1, 4])
    func twoWatchersAndAWriterAgreeOnEveryChangeAndRevision(eventLoops: Int) async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch, extraArguments: ["--event-loops", "\(eventLoops)"])
        let writes = 200
        let first = try await startWatch(["sensor/", "--count", "\(writes)"], scratch: scratch)
        let second = try await startWatch(["--count", "\(writes)"], scratch: scratch)
        let writer = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "writer"))
        var watches: UInt64 = 0
        for _ in 0..<500 where watches < 2 {
            try await Task.sleep(for: .milliseconds(20))
            watches = try await writer.status().watches
        }
        #expect(watches == 2)

        // Concurrent writers on one connection: pipelined requests, group-committed.
        var acknowledged: [String: UInt64] = [:]
        try await withThrowingTaskGroup(of: (String, UInt64).self) { group in
            for index in 0..<writes {
                group.addTask {
                    let key = "sensor/\(index % 10)"
                    let result = try await writer.put(key, json: "\(index)")
                    return ("\(key)@\(result.revision)", result.version)
                }
            }
            for try await (keyAtRevision, version) in group { acknowledged[keyAtRevision] = version }
        }

        #expect(try await first.waitForExit() == 0)
        #expect(try await second.waitForExit() == 0)
        let seenByFirst = try watchLines(first.stdout)
        let seenBySecond = try watchLines(second.stdout)
        #expect(seenByFirst == seenBySecond)
        #expect(seenByFirst.map(\.revision) == Array(1...UInt64(writes)))
        #expect(Dictionary(uniqueKeysWithValues: seenByFirst.map { ("\($0.key)@\($0.revision)", $0.version) }) == acknowledged)
        try await daemon.stop()
    }

    @Test func anEventLoopCountOutOfRangeIsRefusedByName() async throws {
        let scratch = try Scratch()
        for count in ["0", "257"] {
            let child = try await ChildProcess(
                try Binaries.path("syncd"), ["--socket", scratch.socket, "--database", scratch.database, "--event-loops", count],
                scratch: scratch, name: "syncd")
            #expect(try await child.waitForExit() != 0)
            #expect(child.stderr.contains("--event-loops must be between 1 and 256"))
            #expect(!FileManager.default.fileExists(atPath: scratch.socket))
        }
    }
}
