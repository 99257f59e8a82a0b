import Foundation
import SharedState
import Testing

/// A feature names the schema its values satisfy, and its process checks at start-up that syncd
/// holds it: one message at launch instead of a decode failure at the first change (issue 57).
@Suite(.timeLimit(.minutes(1))) struct SchemaRequirementTests {
    static let visitors = SchemaRequirement(prefix: "lobby/", json: #"{"type": "integer", "minimum": 0}"#)

    /// The README's lobby, hosted as its process would be, until it has nothing left to do.
    @MainActor private func runLobby(_ host: FeatureHost) async throws -> FeatureHost.Ending {
        try await host.run(initialState: Lobby.State(), reducer: { Lobby() }, start: .doorOpened, exitWhenIdle: true)
    }

    @Test func aFeatureProcessStartsOnlyWhenSyncdHoldsTheSchemaItRequires() async throws {
        try await withDaemon { socket in
            let host = FeatureHost(name: "lobby", socketPath: socket, requiring: [Self.visitors])
            let client = try await connect(socket)

            // None yet: the process ends before its store starts, saying what to do.
            await #expect(
                throws: SharedStateError(
                    .notFound,
                    #"syncd holds no schema for "lobby/", and this process requires one: set it with `syncctl schema set lobby/ FILE`"#)
            ) {
                try await runLobby(host)
            }
            #expect(try await client.exists(["lobby/visitors"]).versions.isEmpty, "the store never ran")

            // Another schema: said with both.
            try await client.setSchema("lobby/", document: Data(#"{"type":"string"}"#.utf8))
            let other = await #expect(throws: SharedStateError.self) {
                try await runLobby(host)
            }
            #expect(other?.code == .conflict)
            #expect(other?.message.contains(#"syncd's schema for "lobby/" (version 1) is not the one this process requires"#) == true)

            // The same document, spelled otherwise: the feature runs.
            try await client.setSchema("lobby/", document: Data(#"{ "minimum": 0, "type": "integer" }"#.utf8))
            let ending = try await runLobby(host)
            #expect(ending == .idle)
            #expect(try await client.get("lobby/visitors").value == Data("1".utf8))
            await client.close()
        }
    }

    @Test func aTypedKeyNamesItsSchema() {
        let key = SharedKey<Int>("lobby/visitors", default: 0, schema: Self.visitors)
        #expect(key.schema == Self.visitors)
        #expect(SharedKey<Int>("lobby/visitors", default: 0).schema == nil)
    }
}
