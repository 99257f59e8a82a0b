import Foundation
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// `--backend` and the configuration file's `backend` and `etcd`: the command line wins, and a
/// setting that cannot work is refused at start with what is wrong.
@Suite struct BackendConfigurationTests {
    @Test func sqliteIsTheDefault() throws {
        #expect(try BackendConfiguration.resolve(name: nil, endpoints: nil, prefix: nil, leaseTTLSeconds: nil, file: nil) == .sqlite)
    }

    @Test func theCommandLineWinsOverTheFile() throws {
        let file = try decode(
            #"{ "backend": "etcd", "etcd": { "endpoints": ["http://10.0.0.1:2379"], "prefix": "/fleet/", "leaseTTLSeconds": 9 } }"#)
        let fromFile = try BackendConfiguration.resolve(name: nil, endpoints: nil, prefix: nil, leaseTTLSeconds: nil, file: file)
        #expect(fromFile == .etcd(.init(endpoints: ["http://10.0.0.1:2379"], prefix: "/fleet/", leaseTTLSeconds: 9)))
        let overridden = try BackendConfiguration.resolve(
            name: "etcd", endpoints: "127.0.0.1:2379, 127.0.0.1:22379", prefix: nil, leaseTTLSeconds: 3, file: file)
        #expect(overridden == .etcd(.init(endpoints: ["127.0.0.1:2379", "127.0.0.1:22379"], prefix: "/fleet/", leaseTTLSeconds: 3)))
        #expect(try BackendConfiguration.resolve(name: "sqlite", endpoints: nil, prefix: nil, leaseTTLSeconds: nil, file: file) == .sqlite)
    }

    @Test(
        arguments: [
            ("etcd", nil, nil, nil, "--backend etcd needs --etcd-endpoints"),
            ("etcd", "http://a:b", nil, nil, "etcd endpoint"),
            ("etcd", "127.0.0.1:2379", "sharedstate", nil, #"the etcd prefix "sharedstate" must start and end with "/""#),
            ("etcd", "127.0.0.1:2379", nil, 0, "the etcd lease TTL is 0 s"),
            ("redis", nil, nil, nil, #"unknown backend "redis": it is sqlite (the default) or etcd"#),
        ] as [(String, String?, String?, Int?, String)])
    func aSettingThatCannotWorkIsRefused(name: String, endpoints: String?, prefix: String?, ttl: Int?, message: String) {
        #expect {
            _ = try BackendConfiguration.resolve(name: name, endpoints: endpoints, prefix: prefix, leaseTTLSeconds: ttl, file: nil)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func aMisspeltEtcdFieldIsRefusedWithItsLine() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("syncd.json")
        try "{\n  \"etcd\": {\n    \"endpoint\": []\n  }\n}".write(toFile: path, atomically: true, encoding: .utf8)
        #expect {
            _ = try ConfigurationFile.load(path: path)
        } throws: { error in
            "\(error)".contains(#"line 3: unknown field "etcd.endpoint" (allowed: endpoints, prefix, leaseTTLSeconds)"#)
        }
    }

    private func decode(_ text: String) throws -> ConfigurationFile {
        let directory = try TemporaryDirectory()
        let path = directory.file("syncd.json")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return try ConfigurationFile.load(path: path)
    }
}
