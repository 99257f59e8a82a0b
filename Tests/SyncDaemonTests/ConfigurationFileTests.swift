import Foundation
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// The configuration file: a misspelt or mistyped field is refused with its line, not ignored.
@Suite struct ConfigurationFileTests {
    @Test func aGoodFileGivesItsSettings() throws {
        let file = try load(#"{ "logLevel": "debug", "limits": { "maxValueBytes": 2048 } }"#)
        #expect(file.logLevel == "debug")
        #expect(file.limits?.maxValueBytes == 2048)
    }

    @Test(arguments: [
        (
            """
            {
              "limits": {
                "maxKeyBytes": 512,
                "maxValuBytes": 2048
              }
            }
            """,
            #"line 4: unknown field "limits.maxValuBytes" (allowed: maxKeyBytes, "#
        ),
        (
            """
            {
              "loglevel": "debug"
            }
            """,
            #"line 2: unknown field "loglevel" (allowed: logLevel, limits, backend, etcd)"#
        ),
        (
            """
            {
              "limits": {

                "maxKeyBytes": "512"
              }
            }
            """,
            "line 4: limits.maxKeyBytes has the wrong type"
        ),
    ])
    func aBadFileIsRefusedNamingTheLine(text: String, message: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("syncd.json")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        #expect {
            _ = try ConfigurationFile.load(path: path)
        } throws: { error in
            let description = "\(error)"
            return description.hasPrefix("configuration file \(path)") && description.contains(message)
        }
    }

    private func load(_ text: String) throws -> ConfigurationFile {
        let directory = try TemporaryDirectory()
        let path = directory.file("syncd.json")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return try ConfigurationFile.load(path: path)
    }
}
