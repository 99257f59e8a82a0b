import Foundation
import SyncClient
import Testing

@Suite(.timeLimit(.minutes(2))) struct WatchAgreementTests {
    @Test func twoWatchersAndAWriterAgreeOnEveryChangeAndRevision() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let writes = 200
        let first = try startWatch(["sensor/", "--count", "\(writes)"], scratch: scratch)
        let second = try startWatch(["--count", "\(writes)"], scratch: scratch)
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
}
