import SyncClient

/// A put syncd acknowledged, and when.
struct AcknowledgedPut: Sendable {
    var key: String
    var value: Int
    var revision: UInt64
    var at: ContinuousClock.Instant
}

extension ThrowingTaskGroup where ChildTaskResult == Void, Failure == any Error {
    /// Adds `lanes` writers on each of `connections` new connections to syncd at `socket` (no
    /// reconnects): each puts 1, 2, 3, … to its own key, `prefix/connection/lane`, and hands every
    /// acknowledged put to `acknowledged`, until syncd stops answering, `acknowledged` returns
    /// false, or the task is cancelled (a test that gave up).
    mutating func addWriters(
        socket: String, prefix: String, connections: Int, lanes: Int,
        acknowledged: @escaping @Sendable (AcknowledgedPut) -> Bool
    ) async throws {
        for connection in 0..<connections {
            var configuration = SharedStateClient.Configuration(socketPath: socket, clientName: "writer-\(connection)")
            configuration.reconnects = false
            let client = try await SharedStateClient.connect(configuration)
            for lane in 0..<lanes {
                addTask {
                    let key = "\(prefix)/\(connection)/\(lane)"
                    for value in 1... {
                        guard !Task.isCancelled, let result = try? await client.put(key, json: "\(value)") else { break }
                        guard acknowledged(AcknowledgedPut(key: key, value: value, revision: result.revision, at: .now)) else { break }
                    }
                }
            }
        }
    }
}
