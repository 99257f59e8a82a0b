import Foundation
import SharedStateWire
import SyncClient
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Requests sent in one burst, some of which must wait (a watch replaying the change log), are
/// handled in the order sent and answered in the order the protocol promises.
@Suite(.timeLimit(.minutes(2))) struct PipeliningTests {
    /// Also with progress notices every 10 ms: one may come between any two events (a watch that
    /// was sent nothing for a round gets one), and must never be taken for a change.
    @Test(arguments: [nil, "0.01"])
    func aReplayingWatchHoldsBackTheRequestsBehindItAndKeepsEventsBeforeAnswers(progressInterval: String?) async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch, extraArguments: progressInterval.map { ["--progress-interval", $0] } ?? [])
        #expect(try await syncctl(["put", "a", "1"], scratch: scratch).status == 0)
        #expect(try await syncctl(["put", "a", "2"], scratch: scratch).status == 0)

        let connection = try RawConnection(path: scratch.socket)
        let burst = [
            RawConnection.frame { $0.hello = .with { $0.protocolVersion = WireProtocol.version } },
            // Replays revisions 1 and 2 from the change log: the requests behind it wait.
            RawConnection.request(1) { $0.watch = .with { $0.afterRevision = 0 } },
            RawConnection.request(2) {
                $0.put = .with {
                    $0.key = "a"
                    $0.value = Data("3".utf8)
                }
            },
            RawConnection.request(3) { $0.get = .with { $0.key = "a" } },
        ]
        connection.send(burst.flatMap { $0 })

        var order: [String] = []
        var responses: [UInt64: Sharedstate_V1_Response] = [:]
        for frame in try await connection.readFrames(until: { frames in
            frames.filter { if case .response = $0.kind { true } else { false } }.count == 3
                && frames.contains { if case .event(let event) = $0.kind { event.revision == 3 } else { false } }
        }) {
            switch frame.kind {
            case .response(let response):
                #expect(responses[response.id] == nil, "request \(response.id) answered twice")
                responses[response.id] = response
                order.append("response \(response.id)")
            case .event(let event) where event.kind == .progress:
                order.append("progress \(event.revision)")
            case .event(let event):
                order.append("event \(event.revision)")
            default:
                break
            }
        }
        #expect(responses[1]?.watch.revision == 0)
        #expect(responses[2]?.put.revision == 3)
        // Handled after the replay: it sees at least revision 2.
        #expect((responses[3]?.get.revision ?? 0) >= 2)
        // The watch answers first and replays in order; a write's own event precedes its answer.
        #expect(order.first == "response 1")
        #expect(order.filter { $0.hasPrefix("event") } == ["event 1", "event 2", "event 3"])
        // A progress notice names the revision the watch is current with: never one it has not
        // been sent yet, never one before what it was sent.
        var current: UInt64 = 0
        for item in order {
            let revision = UInt64(item.split(separator: " ").last!)!
            if item.hasPrefix("event") { current = revision }
            if item.hasPrefix("progress") { #expect(revision == current, "\(order)") }
        }
        let event3 = try #require(order.firstIndex(of: "event 3"))
        let answer2 = try #require(order.firstIndex(of: "response 2"))
        #expect(event3 < answer2)
        try await daemon.stop()
    }

    /// Many tasks sending on one client connection at once, more than its socket holds: each
    /// request is written by its caller's thread while nothing waits before it, and queued behind
    /// what does otherwise. Every frame must still reach syncd whole, each task's in its order.
    @Test func requestsFromManyTasksAtOnceArriveWholeAndInEachTasksOrder() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "many-tasks"))
        let filler = String(repeating: "x", count: 96 * 1024)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for sequence in 1...40 {
                        // A large frame, then a small one: the socket fills and drains under both.
                        try await client.put("many/\(task)", json: #"{"sequence":\#(sequence),"filler":"\#(filler)"}"#)
                        try await client.put("many/\(task)/small", json: "\(sequence)")
                    }
                }
            }
            try await group.waitForAll()
        }
        for task in 0..<8 {
            let entry = try await client.get("many/\(task)")
            let object = try #require(try JSONSerialization.jsonObject(with: entry.value) as? [String: Any])
            #expect(object["sequence"] as? Int == 40)
            #expect(entry.version == 40)
            #expect(try await client.get("many/\(task)/small").value == Data("40".utf8))
        }
        await client.close()
        try await daemon.stop()
    }
}

extension RawConnection {
    /// A client frame as it goes on the wire: its length, then the message.
    static func frame(_ fill: (inout Sharedstate_V1_ClientFrame) -> Void) -> [UInt8] {
        let payload: [UInt8] = try! Sharedstate_V1_ClientFrame.with(fill).serializedBytes()
        return withUnsafeBytes(of: UInt32(payload.count).bigEndian) { Array($0) } + payload
    }

    /// A request frame with id `id`.
    static func request(_ id: UInt64, _ fill: @escaping (inout Sharedstate_V1_Request) -> Void) -> [UInt8] {
        frame {
            $0.request = .with {
                $0.id = id
                fill(&$0)
            }
        }
    }

    /// Reads and decodes frames until `isDone` says the ones read so far are enough.
    /// - Throws: When the connection ends, or nothing arrives for 10 s, first.
    func readFrames(until isDone: ([Sharedstate_V1_ServerFrame]) -> Bool) async throws -> [Sharedstate_V1_ServerFrame] {
        var bytes: [UInt8] = []
        var frames: [Sharedstate_V1_ServerFrame] = []
        while !isDone(frames) {
            let chunk = await receive()
            guard !chunk.isEmpty else { throw TestFailure("the connection ended after \(frames.count) frames") }
            bytes += chunk
            while bytes.count >= 4 {
                let length = bytes[0..<4].reduce(0) { $0 << 8 | Int($1) }
                guard bytes.count >= 4 + length else { break }
                frames.append(try Sharedstate_V1_ServerFrame(serializedBytes: Array(bytes[4..<4 + length])))
                bytes.removeFirst(4 + length)
            }
        }
        return frames
    }
}
