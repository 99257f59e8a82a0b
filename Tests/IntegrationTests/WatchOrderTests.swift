import Foundation
import SharedStateWire
import SyncClient
import Testing

/// syncd hands a revision to a connection's watches in the order of their ids, which clients
/// give in the order they start watches: a feature's list screen sees a change before the detail
/// screen opened from it.
@Suite(.timeLimit(.minutes(2))) struct WatchOrderTests {
    @Test func aRevisionReachesAConnectionsWatchesInTheOrderTheyStarted() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let connection = try RawConnection(path: scratch.socket)
        // Prefixes of several lengths and one watch of everything, started in an order that
        // neither the prefixes' lengths nor their hashes follow.
        let prefixes = ["doors/", "doors/1", "", "d", "doors/1", "doors/", "do"]
        var burst = RawConnection.frame { $0.hello = .with { $0.protocolVersion = WireProtocol.version } }
        for (index, prefix) in prefixes.enumerated() {
            burst += RawConnection.request(UInt64(index + 1)) { $0.watch = .with { $0.prefixes = [prefix] } }
        }
        let writes = 30
        for write in 1...writes {
            burst += RawConnection.request(UInt64(100 + write)) {
                $0.put = .with {
                    $0.key = "doors/1"
                    $0.value = Data("\(write)".utf8)
                }
            }
        }
        connection.send(burst)

        let frames = try await connection.readFrames { frames in
            frames.filter { if case .response(let response) = $0.kind { response.id > 100 } else { false } }.count == writes
        }
        var watchesOfRevision: [UInt64: [UInt64]] = [:]
        for frame in frames {
            if case .event(let event) = frame.kind, event.kind == .changes {
                watchesOfRevision[event.revision, default: []].append(event.watchID)
            }
        }
        #expect(watchesOfRevision.count == writes)
        let started = Array(1...UInt64(prefixes.count))
        let misordered = watchesOfRevision.filter { $0.value != started }
        #expect(misordered.isEmpty, "each revision's events by watch id: \(misordered.sorted { $0.key < $1.key })")
        try await daemon.stop()
    }
}
