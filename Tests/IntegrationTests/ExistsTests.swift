import Foundation
import SyncClient
import Testing

/// `exists` end to end, against a real syncd: the Swift client and syncctl. (The in-memory
/// stand-in answers alike: BackendParityTests.)
@Suite(.timeLimit(.minutes(2))) struct ExistsTests {
    @Test func saysWhichKeysExistWithTheirVersionsAtOneRevision() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "exists"))
        try await client.put("presence/panel", json: "1")
        try await client.put("presence/panel", json: "2")
        try await client.put("presence/sensor", json: "3")
        try await client.delete("presence/sensor")
        let keys = ["presence/panel", "presence/sensor", "presence/never"]
        #expect(try await client.exists(keys) == ExistsResult(versions: ["presence/panel": 2], revision: 4))
        #expect(try await client.exists([]) == ExistsResult(versions: [:], revision: 4))
        do {
            _ = try await client.exists((0...128).map { "k/\($0)" })
            Issue.record("129 keys were looked up")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(error.message.contains("129 keys; the limit is 128"))
        }

        let plain = try await syncctl(["exists", "presence/panel", "presence/never"], scratch: scratch)
        #expect(plain.status == 2)
        #expect(plain.stdout == "presence/panel\t2\npresence/never\tabsent\n")
        let json = try await syncctl(["--json", "exists", "presence/panel", "presence/never"], scratch: scratch)
        #expect(json.stdout == #"{"revision":4,"versions":{"presence/panel":2,"presence/never":null}}"# + "\n")
        #expect(try await syncctl(["exists", "presence/panel"], scratch: scratch).status == 0)
        let bad = try await syncctl(["exists", "a//b"], scratch: scratch)
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("a//b"))
        await client.close()
        try await daemon.stop()
    }
}
