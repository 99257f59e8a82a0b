import Foundation
import SyncClient
import Testing

/// What the client says when it cannot even reach a socket.
@Suite struct ConnectErrorTests {
    @Test func aMissingSocketIsNamedWithWhatToDo() async throws {
        let path = "/tmp/ss-none-\(UUID().uuidString.prefix(8)).sock"
        await #expect {
            _ = try await SharedStateClient.connect(.init(socketPath: path))
        } throws: { error in
            let error = error as? SharedStateError
            return error?.code == .unavailable
                && error?.message
                    == "cannot reach syncd at \(path): No such file or directory. Is syncd running? Start it with `syncd`, or point --socket / SYNCD_SOCKET at its socket."
        }
    }

    @Test func aPathTooLongForASocketIsNamedAsSuch() async throws {
        let path = "/tmp/" + String(repeating: "x", count: 120) + ".sock"
        await #expect {
            _ = try await SharedStateClient.connect(.init(socketPath: path))
        } throws: { error in
            (error as? SharedStateError)?.message
                == "cannot reach syncd at \(path): the path is 130 bytes, longer than a socket path may be (107)."
        }
    }
}
