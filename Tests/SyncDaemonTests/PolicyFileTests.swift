import Foundation
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// A policy file is read through `Decodable`: a good one gives its grants, a bad one a sentence
/// naming the file, the line and the problem.
@Suite struct PolicyFileTests {
    @Test func aGoodFileGivesItsGrants() throws {
        let policy = try load(
            """
            {
              "grants": [
                { "prefix": "", "groups": ["root"], "read": true, "write": true },
                { "prefix": "sensor/", "users": [1001, 1002], "read": true }
              ]
            }
            """)
        #expect(policy.grants.map(\.prefix) == ["", "sensor/"])
        #expect(policy.grants[0].groups == [0])
        #expect(policy.grants[1].users == [1001, 1002])
        #expect(policy.grants[1].read && !policy.grants[1].write)
    }

    @Test(arguments: [
        (
            """
            {
              "grants": [
                { "prefix": "a/", "users": [1], "read": true },
                { "prefix": "b/", "users": [1],
                  "wirte": true }
              ]
            }
            """,
            #"line 5: grant 2: unknown field "wirte" (allowed: prefix, users, groups, read, write)"#
        ),
        (
            """
            {
              "grants": [
                { "prefix": "a/", "users": [1], "read": "yes" }
              ]
            }
            """,
            #"line 3: grant 1: "read" must be true or false"#
        ),
        (
            """
            {
              "grants": [
                { "prefix": "a/",
                  "users": [1, -4], "read": true }
              ]
            }
            """,
            #"line 4: grant 1: "users" must be a list of names or numbers"#
        ),
        (
            """
            {
              "grants": [
                { "prefix": "a/", "read": true,
                  "users": [
                    "root",
                    "no-such-user-here"
                  ] }
              ]
            }
            """,
            #"line 6: grant 1: unknown user "no-such-user-here""#
        ),
        (
            """
            {
              "grants": [
                { "users": [1], "read": true }
              ]
            }
            """,
            #"line 3: grant 1 needs a "prefix" string ("" for every key)"#
        ),
        (
            """
            {
              "grants": [
                { "prefix": "a/", "users": [1], "read": true },

                { "prefix": "b/", "users": [1] }
              ]
            }
            """,
            #"line 5: grant 2 grants neither "read" nor "write""#
        ),
        (
            """
            {
              "grants": [
                { "prefix": "/a", "users": [1], "read": true }
              ]
            }
            """,
            #"line 3: grant 1: "#
        ),
        (
            """
            {
              "grants": [ "everyone" ]
            }
            """,
            #"line 2: grant 1 must be an object"#
        ),
        (
            """
            {
              "grant": []
            }
            """,
            #"line 2: the top level: unknown field "grant" (allowed: grants)"#
        ),
        ("{}", #"the top level must be an object with "grants""#),
        ("{ \"grants\": [", "not valid JSON"),
    ])
    func aBadFileIsRefusedNamingTheLine(text: String, message: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("policy.json")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        #expect {
            _ = try AccessPolicy.load(path: path, daemonUser: 999)
        } throws: { error in
            let description = "\(error)"
            return description.hasPrefix("policy file \(path)") && description.contains(message)
        }
    }

    private func load(_ text: String) throws -> AccessPolicy {
        let directory = try TemporaryDirectory()
        let path = directory.file("policy.json")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return try AccessPolicy.load(path: path, daemonUser: 999)
    }
}
