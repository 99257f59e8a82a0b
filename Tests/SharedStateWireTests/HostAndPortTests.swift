import Testing

@testable import SharedStateWire

/// The `HOST:PORT` options of syncd (`--metrics-address`) and syncctl (`inspect --address`).
@Suite struct HostAndPortTests {
    @Test func readsAHostAndAPort() {
        #expect(HostAndPort(parsing: "127.0.0.1:9464") == HostAndPort(host: "127.0.0.1", port: 9464))
        #expect(HostAndPort(parsing: "[::1]:0") == HostAndPort(host: "::1", port: 0))
        #expect(HostAndPort(parsing: "localhost:65535")?.port == 65535)
    }

    @Test(arguments: ["localhost", "localhost:", "localhost:http", "localhost:65536", "localhost:-1", ""])
    func refusesWhatIsNotHostColonPort(_ text: String) {
        #expect(HostAndPort(parsing: text) == nil)
    }
}
