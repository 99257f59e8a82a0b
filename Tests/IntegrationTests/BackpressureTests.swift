import Foundation
import SharedStateWire
import SyncClient
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A client that pipelines requests and never reads its answers: syncd stops reading it instead of
/// holding its answers (or its writes) in memory, and serves everyone else meanwhile.
@Suite(.timeLimit(.minutes(2))) struct BackpressureTests {
    private func residentBytes(of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        let kilobytes = try #require(Int(line.split(separator: " ").dropFirst().first ?? ""))
        return kilobytes * 1024
    }

    /// `count` requests, each one frame, `make` building the request of each id.
    private func frames(_ count: Int, _ make: (UInt64, inout Sharedstate_V1_Request) -> Void) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for id in 1...UInt64(count) {
            let payload: [UInt8] = try Sharedstate_V1_ClientFrame.with { frame in
                frame.request = .with { make(id, &$0) }
            }.serializedBytes()
            bytes += withUnsafeBytes(of: UInt32(payload.count).bigEndian) { Array($0) } + payload
        }
        return bytes
    }

    /// Sends `chunk` over and over, up to `total` times, while the socket takes it; returns how
    /// many whole chunks went out once it has taken nothing for a second (syncd stopped reading).
    private func flood(_ connection: RawConnection, with chunk: [UInt8], upTo total: Int) async throws -> Int {
        var sentBytes = 0
        var stalledSince: ContinuousClock.Instant?
        while sentBytes < total * chunk.count {
            let offset = sentBytes % chunk.count
            let written = chunk.withUnsafeBytes { connection.sendWithoutBlocking(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            if written > 0 {
                sentBytes += written
                stalledSince = nil
                continue
            }
            if let stalledSince, ContinuousClock.now - stalledSince > .seconds(1) { break }
            if stalledSince == nil { stalledSince = .now }
            try await Task.sleep(for: .milliseconds(10))
        }
        return sentBytes / chunk.count
    }

    @Test(arguments: ["gets", "puts"])
    func aClientThatNeverReadsIsStoppedNotBuffered(_ kind: String) async throws {
        let scratch = try Scratch()
        // The smallest outbound queue syncd allows: the mechanism is the same at any bound, and
        // the default's 4 MiB took about 200,000 answered puts to fill, 55 s on an idle machine
        // and more than the time limit on a loaded one.
        try #"{"limits":{"maxOutboundQueueBytes":65536}}"#.write(toFile: scratch.file("syncd.json"), atomically: true, encoding: .utf8)
        let daemon = try await DaemonProcess(scratch, extraArguments: ["--config", scratch.file("syncd.json")])
        let value = "\"" + String(repeating: "v", count: 1_000) + "\""
        _ = try await syncctl(["put", "big", value], scratch: scratch)
        let before = try residentBytes(of: daemon.child.pid)

        let connection = try RawConnection(path: scratch.socket)
        #expect(try await connection.greet(name: "never-reads"))
        // 1,000 requests a chunk: 1,000,000 in all if syncd took them.
        let chunk = try frames(1_000) { id, request in
            request.id = id
            if kind == "gets" {
                request.get.key = "big"
            } else {
                request.put.key = "flood/\(id)"
                request.put.value = Data(value.utf8)
            }
        }
        let sent = try await flood(connection, with: chunk, upTo: 1_000)
        #expect(sent < 1_000, "syncd took all \(kind) without the client reading a single answer")

        // Everyone else is served meanwhile.
        #expect(try await syncctl(["put", "other", "1"], scratch: scratch).status == 0)
        #expect(try await syncctl(["get", "other"], scratch: scratch).stdout == "1\n")
        let grown = try residentBytes(of: daemon.child.pid) - before
        #expect(grown < 64 << 20, "syncd grew by \(grown >> 20) MB")
        withExtendedLifetime(connection) {}
        try await daemon.stop()
    }
}
