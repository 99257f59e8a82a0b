import Foundation
import SyncClient
import Testing

/// Schemas end to end (issue 57), against a real syncd: set with syncctl, enforced on every put
/// from syncctl and the Swift client, durable across a restart, watchable, and in backups and
/// restores. The Python client's side is in clients/python/tests/test_schemas.py.
@Suite(.timeLimit(.minutes(3))) struct SchemaTests {
    static let climate = #"""
        {"title": "A room's climate", "type": "object",
         "properties": {"target": {"type": "number", "minimum": 5, "maximum": 30},
                        "mode": {"enum": ["heat", "cool", "off"]}},
         "required": ["target", "mode"], "additionalProperties": false}
        """#

    @Test func aSchemaRefusesEveryWriteThatBreaksItAndNamesWhereAndWhy() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        _ = try await syncctl(["put", "climate/living", #"{"target":40,"mode":"heat"}"#], scratch: scratch)
        _ = try await syncctl(["put", "climate/hall", #"{"target":21,"mode":"cool"}"#], scratch: scratch)
        _ = try await syncctl(["put", "climate/attic", #"{"target":18}"#], scratch: scratch)

        // Values already written break it: refused, naming each with its first violation.
        for arguments in [["schema", "set", "climate/", "-", "--check"], ["schema", "set", "climate/", "-"]] {
            let refused = try await syncctl(arguments, scratch: scratch, stdin: Self.climate)
            #expect(refused.status == 6)
            #expect(refused.stderr.contains(#"the schema of prefix "climate/" is refused: 2 values already written under it break it"#))
            #expect(refused.stderr.contains("climate/attic: /mode is missing"))
            #expect(refused.stderr.contains("climate/living: /target is 40, above the maximum 30"))
        }
        #expect(try await syncctl(["schema", "get", "climate/"], scratch: scratch).status == 2)
        _ = try await syncctl(["put", "climate/living", #"{"target":22,"mode":"heat"}"#], scratch: scratch)
        _ = try await syncctl(["delete", "climate/attic"], scratch: scratch)
        let checked = try await syncctl(["schema", "set", "climate/", "-", "--check"], scratch: scratch, stdin: Self.climate)
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(try await syncctl(["schema", "get", "climate/"], scratch: scratch).status == 2, "--check set nothing")
        let set = try await syncctl(["--json", "schema", "set", "climate/", "-"], scratch: scratch, stdin: Self.climate)
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout == #"{"prefix":"climate/","revision":6,"version":1}"# + "\n")

        // syncctl: a message naming key, place, rule and limit, and exit code 6; nothing written.
        let put = try await syncctl(["put", "climate/living", #"{"target":40,"mode":"heat"}"#], scratch: scratch)
        #expect(put.status == 6)
        #expect(put.stderr == "syncctl: climate/living: /target is 40, above the maximum 30\n")
        let extra = try await syncctl(["put", "climate/den", #"{"target":20,"mode":"off","fan":1}"#], scratch: scratch)
        #expect(extra.stderr == "syncctl: climate/den: /fan is 1, not a member the schema names\n")
        #expect(try await syncctl(["get", "climate/living"], scratch: scratch).stdout == #"{"target":22,"mode":"heat"}"# + "\n")

        // The Swift client: the fields, one by one.
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "schemas"))
        do {
            try await client.put("climate/living", json: #"{"target":"warm","mode":"heat"}"#)
            Issue.record("a string target was written")
        } catch {
            #expect(error.code == .schemaViolation)
            #expect(error.message == #"climate/living: /target is "warm", a string, not a number"#)
            let violation = try #require(error.violations.first)
            #expect(violation.key == "climate/living")
            #expect(violation.pointer == "/target")
            #expect(violation.rule == "type")
            #expect(violation.limit == "number")
            #expect(violation.found == .string("warm"))
            #expect(violation.prefix == "climate/")
        }
        // A transaction: a violation in either branch refuses the whole of it.
        let before = try await client.get("climate/hall").modRevision
        var transaction = Transaction(
            compares: [.absent("climate/hall")], onSuccess: [.put("climate/new", json: #"{"target":20,"mode":"off"}"#)],
            onFailure: [
                .put("climate/hall", json: #"{"target":20,"mode":"off"}"#), .put("climate/den", json: #"{"target":99,"mode":"off"}"#),
            ])
        do {
            _ = try await client.transaction(transaction)
            Issue.record("a transaction breaking the schema was applied")
        } catch {
            #expect(error.code == .schemaViolation)
            #expect(error.violations.map(\.description) == ["climate/den: /target is 99, above the maximum 30"])
        }
        #expect(try await client.get("climate/hall").modRevision == before)
        transaction.onFailure.removeLast()
        #expect(try await client.transaction(transaction).succeeded == false)
        #expect(try await client.get("climate/hall").value == Data(#"{"target":20,"mode":"off"}"#.utf8))
        // A transaction cannot set a schema; a schema cannot be ephemeral.
        do {
            _ = try await client.transaction(Transaction(onSuccess: [.put("$schemas/other/", json: "true")]))
            Issue.record("a transaction set a schema")
        } catch {
            #expect(error.code == .invalidArgument)
        }
        do {
            try await client.put("$schemas/other/", json: "true", ephemeral: true)
            Issue.record("an ephemeral schema was set")
        } catch {
            #expect(error.message == #"the schema of prefix "other/" cannot be ephemeral"#)
        }

        // A keyword outside the vocabulary is refused by name, never ignored.
        let unknown = try await syncctl(
            ["schema", "set", "other/", "-"], scratch: scratch, stdin: #"{"type":"object","patternProperties":{}}"#)
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains(#"the keyword "patternProperties" is not one syncd checks"#))

        // Seen: list, get, and the schema that governs a key.
        #expect(try await syncctl(["schema", "list"], scratch: scratch).stdout == "climate/\tA room's climate\n")
        let governing = try await syncctl(["--json", "get", "climate/hall", "--schema"], scratch: scratch)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(governing.stdout.utf8)) as? [String: Any])
        #expect((object["schema"] as? [String: Any])?["prefix"] as? String == "climate/")
        #expect(try await client.schema(governing: "climate/hall")?.prefix == "climate/")
        #expect(try await client.schema(governing: "lamp/hall") == nil)

        // Counted: per client (the Swift client's two refusals above) and per prefix.
        let me = try #require(try await client.clients().first { $0.sessionID == client.sessionID })
        #expect(me.schemaRefusals == 2)
        #expect(me.lastSchemaRefusal?.description == "climate/den: /target is 99, above the maximum 30")
        #expect(me.watchList.isEmpty && me.ephemeralKeys.isEmpty, "details only when asked for")
        // With details: the client's watches and ephemeral keys, as the inspector's client view
        // and `syncctl clients --details` show them.
        try await client.put("presence/thermostat", json: "true", ephemeral: true)
        var watch = client.watch(prefixes: ["climate/", "presence/"], start: .now, previousValues: true).makeAsyncIterator()
        _ = try await watch.next()
        let detailed = try #require(try await client.clients(details: true).first { $0.sessionID == client.sessionID })
        #expect(detailed.ephemeralKeys == ["presence/thermostat"] && detailed.ephemeralKeyCount == 1)
        #expect(detailed.watchList.map(\.prefixes) == [["climate/", "presence/"]])
        #expect(detailed.watchList.first?.previousValues == true)
        let listed = try await syncctl(["clients", "--details"], scratch: scratch).stdout
        #expect(listed.contains(#"watch \#(detailed.watchList[0].id): "climate/", "presence/" (previous values)"#), "\(listed)")
        #expect(listed.contains(#"ephemeral "presence/thermostat""#), "\(listed)")
        #expect(listed.contains("latest refused: climate/den: /target is 99, above the maximum 30"), "\(listed)")
        let metrics = try await syncctl(["metrics"], scratch: scratch)
        #expect(metrics.stdout.contains(#"syncd_schema_refusals_total{prefix="climate/"} 5"#), "\(metrics.stdout)")

        // Removed, it governs nothing; values are left as they are.
        #expect(try await syncctl(["schema", "delete", "climate/"], scratch: scratch).status == 0)
        #expect(
            try await syncctl(["schema", "delete", "climate/"], scratch: scratch).stderr.contains(#"the prefix "climate/" has no schema"#))
        #expect(try await syncctl(["put", "climate/living", #"{"target":40}"#], scratch: scratch).status == 0)
        await client.close()
        try await daemon.stop()
    }

    @Test func theLongestPrefixGovernsAndRemovingOneIsCheckedAgainstTheNextOne() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "schemas"))
        try await client.setSchema("cfg/", document: Data(#"{"type":"integer"}"#.utf8))
        try await client.setSchema("cfg/names/", document: Data(#"{"type":"string","maxLength":3}"#.utf8))
        try await client.put("cfg/port", json: "8080")
        try await client.put("cfg/names/a", json: #""ééé""#)  // three characters, six bytes
        await #expect(throws: SharedStateError.self) { try await client.put("cfg/names/b", json: "1") }
        await #expect(throws: SharedStateError.self) { try await client.put("cfg/port", json: #""x""#) }
        // Without cfg/names/'s schema, cfg/'s would govern "ééé": refused, the value untouched.
        do {
            try await client.deleteSchema("cfg/names/")
            Issue.record("a schema was removed that left a value breaking the next one")
        } catch {
            #expect(error.code == .schemaViolation)
            #expect(error.violations.map(\.description) == [#"cfg/names/a: the value is "ééé", a string, not an integer"#])
        }
        #expect(try await client.schema(for: "cfg/names/") != nil)
        try await client.delete("cfg/names/a")
        try await client.deleteSchema("cfg/names/")
        #expect(try await client.schemas().map(\.prefix) == ["cfg/"])
        await client.close()
        try await daemon.stop()
    }

    @Test func schemasAreDurableWatchableAndComeBackWithARestore() async throws {
        let scratch = try Scratch()
        var daemon = try await DaemonProcess(scratch)
        let watch = try await startWatch(["--count", "2", "$schemas/"], scratch: scratch)
        try await waitForWatches(1, scratch: scratch)
        #expect(try await syncctl(["schema", "set", "lamp/", "-"], scratch: scratch, stdin: #"{"type":"boolean"}"#).status == 0)
        let backup = try await syncctl(["backup", scratch.file("backup.sqlite")], scratch: scratch)
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(try await syncctl(["schema", "delete", "lamp/"], scratch: scratch).status == 0)
        #expect(try await watch.waitForExit() == 0)
        #expect(try watchLines(watch.stdout).map { "\($0.type) \($0.key)" } == ["put $schemas/lamp/", "delete $schemas/lamp/"])
        #expect(try await syncctl(["put", "lamp/hall", "1"], scratch: scratch).status == 0)
        _ = try await syncctl(["delete", "lamp/hall"], scratch: scratch)

        // A backup whose schema syncd could not use is refused whole (edited behind syncd's back).
        try FileManager.default.copyItem(atPath: scratch.file("backup.sqlite"), toPath: scratch.file("bad.sqlite"))
        let edit = try await ChildProcess(
            "/usr/bin/env",
            [
                "python3", "-c",
                // The schema's bytes replaced by as many others, wherever the backup holds them: in
                // its change log, and in its entries once syncd had moved the journal there.
                #"""
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1])
                old, new = b'{"type":"boolean"}', b'{"oneOf":[1,2,3] }'
                edited = 0
                for revision, body in c.execute("SELECT revision, body FROM changes").fetchall():
                    if old in body:
                        c.execute("UPDATE changes SET body = ? WHERE revision = ?", (body.replace(old, new), revision))
                        edited += 1
                for key, value in c.execute("SELECT key, value FROM entries").fetchall():
                    if old in value:
                        c.execute("UPDATE entries SET value = ? WHERE key = ?", (value.replace(old, new), key))
                        edited += 1
                c.commit()
                sys.exit(0 if edited else 3)
                """#,
                scratch.file("bad.sqlite"),
            ], scratch: scratch, name: "edit")
        #expect(try await edit.waitForExit() == 0, "\(edit.stderr)")
        let bad = try await syncctl(["restore", scratch.file("bad.sqlite")], scratch: scratch)
        #expect(bad.status == 1)
        #expect(
            bad.stderr.contains(
                #"the backup cannot be restored: the schema of prefix "lamp/" cannot be used: the keyword "oneOf" is not one syncd checks"#)
        )
        #expect(try await syncctl(["schema", "get", "lamp/"], scratch: scratch).status == 2, "nothing was restored")

        // Restored, the schema governs again.
        #expect(try await syncctl(["restore", scratch.file("backup.sqlite")], scratch: scratch).status == 0)
        #expect(try await syncctl(["put", "lamp/hall", "1"], scratch: scratch).status == 6)

        // And after a restart, from the database.
        try await daemon.stop()
        daemon = try await DaemonProcess(scratch)
        let refused = try await syncctl(["put", "lamp/hall", "1"], scratch: scratch)
        #expect(refused.status == 6)
        #expect(refused.stderr == "syncctl: lamp/hall: the value is 1, an integer, not a boolean\n")
        #expect(try await syncctl(["put", "lamp/hall", "true"], scratch: scratch).status == 0)
        try await daemon.stop()
    }
}
