import Foundation
import SharedStateWire
import SyncClient
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Limits that keep one client from hurting the others, and the file modes that keep other users out.
@Suite(.timeLimit(.minutes(2))) struct LimitsTests {
    private func daemon(_ scratch: Scratch, limits: String, arguments: [String] = []) async throws -> DaemonProcess {
        try #"{"limits":\#(limits)}"#.write(toFile: scratch.file("syncd.json"), atomically: true, encoding: .utf8)
        return try await DaemonProcess(scratch, extraArguments: ["--config", scratch.file("syncd.json")] + arguments)
    }

    private func mode(of path: String) -> mode_t {
        var status = stat()
        stat(path, &status)
        return status.st_mode & 0o777
    }

    @Test func theSocketIsForOwnerAndGroupAndTheDatabaseForSyncdAlone() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, limits: "{}", arguments: ["--socket-group", "1"])
        _ = try await syncctl(["put", "a", "1"], scratch: scratch)
        #expect(mode(of: scratch.socket) == 0o660)
        var status = stat()
        stat(scratch.socket, &status)
        #expect(status.st_gid == 1)
        #expect(mode(of: scratch.database) == 0o600)
        #expect(mode(of: scratch.database + "-wal") == 0o600)
        #expect(mode(of: scratch.database + "-segments") == 0o600)
        #expect(mode(of: (scratch.database as NSString).deletingLastPathComponent) == 0o700)
        try await daemon.stop()
    }

    @Test func aClientThatSendsNothingOrTricklesIsCutOffAtTheHandshake() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, limits: #"{"handshakeTimeoutSeconds":1}"#)
        // A client that greets at once (from this thread, so a busy test process cannot make it
        // late) keeps its connection past the timeout.
        let greeted = try RawConnection(path: scratch.socket)
        #expect(try await greeted.greet())
        let silent = try RawConnection(path: scratch.socket)
        let trickling = try RawConnection(path: scratch.socket)
        trickling.send([0, 0])  // half a length prefix, then nothing
        for connection in [silent, trickling] {
            let fatal = try RawConnection.fatalError(in: await connection.readUntilClosed())
            #expect(fatal?.code == .protocol)
            #expect(fatal?.message.contains("no Hello within 1 s") == true)
        }
        try await Task.sleep(for: .milliseconds(500))
        let status = Sharedstate_V1_ClientFrame.with {
            $0.request = .with {
                $0.id = 7
                $0.status = .init()
            }
        }
        greeted.sendFrame(try status.serializedBytes())
        let answer = await greeted.receive()
        try #require(answer.count > 4, "the greeted connection was closed")
        let frame = try Sharedstate_V1_ServerFrame(serializedBytes: Array(answer[4...]))
        guard case .response(let response) = frame.kind, case .status = response.result else {
            Issue.record("expected the status, got \(frame)")
            return
        }
        #expect(response.id == 7)
        try await daemon.stop()
    }

    @Test func aConnectionFloodIsRefusedWhileExistingClientsCarryOn() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(
            scratch, limits: #"{"maxConnections":6,"maxConnectionsPerUser":100,"reservedAdministratorConnections":0}"#)
        let bystander = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "bystander"))
        var flood: [RawConnection] = []
        for _ in 0..<5 {
            let connection = try RawConnection(path: scratch.socket)
            #expect(try await connection.greet())
            flood.append(connection)
        }
        // The limit applies at the Hello: the one past it is refused then.
        let refused = try RawConnection(path: scratch.socket)
        refused.sendHello()
        let fatal = try RawConnection.fatalError(in: await refused.readUntilClosed())
        #expect(fatal?.code == .limitReached)
        #expect(fatal?.message.contains("6 clients connected, its limit") == true)
        try await bystander.put("fine", json: "true")
        #expect(try await bystander.status().clients == 6)
        withExtendedLifetime(flood) {}
        try await daemon.stop()
    }

    /// Out of file descriptors (`prlimit`), syncd keeps serving the clients it has, says that it
    /// cannot accept once (at most once in ten seconds) rather than once per attempt, and accepts
    /// again once clients leave.
    @Test func runningOutOfDescriptorsStopsNoClientAndAcceptingResumes() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch, launcher: ["/usr/bin/prlimit", "--nofile=48:48", "--"])
        let bystander = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "bystander"))
        // More than the descriptors left: the last wait in the listening socket's backlog.
        var flood = try (0..<40).map { _ in try RawConnection(path: scratch.socket) }
        for connection in flood { connection.sendHello() }
        // It failed now and then in full runs only (the bystander's connection reset, 24–45 s in):
        // a failure says what syncd logged meanwhile.
        do {
            try await eventually("syncd ran out of descriptors") { daemon.child.stderr.contains("cannot accept a connection") }
            try await bystander.put("still", json: "1")
            #expect(try await bystander.get("still").value == Data("1".utf8))
            // Half a second out of descriptors: five tries to accept, not a spin (which would take
            // most of that half second's CPU; a busy machine can only make it take less).
            let before = daemon.child.cpuTicks
            try await Task.sleep(for: .milliseconds(500))
            let spent = Double(daemon.child.cpuTicks - before) / Double(sysconf(Int32(_SC_CLK_TCK)))
            #expect(spent < 0.25, "syncd spent \(spent) s of CPU in half a second out of descriptors")

            flood.removeAll()
            let newcomer = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "newcomer"))
            try await newcomer.put("after", json: "2")
            #expect(try await bystander.get("after").value == Data("2".utf8))
            // Not on every attempt (one each 100 ms while it is out).
            let reports = daemon.child.stderr.components(separatedBy: "cannot accept a connection").count - 1
            #expect(reports == 1)
            await newcomer.close()
        } catch {
            throw TestFailure("\(error)\nsyncd's log:\n\(daemon.child.stderr.suffix(4_000))")
        }
        await bystander.close()
        try await daemon.stop()
    }

    @Test func oneUserCannotTakeEveryConnection() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, limits: #"{"maxConnectionsPerUser":3,"reservedAdministratorConnections":0}"#)
        let held = try (0..<3).map { _ in try RawConnection(path: scratch.socket) }
        for connection in held { #expect(try await connection.greet()) }
        let refused = try RawConnection(path: scratch.socket)
        refused.sendHello()
        let fatal = try RawConnection.fatalError(in: await refused.readUntilClosed())
        #expect(fatal?.message.contains("user \(getuid()) has 3 clients connected") == true)
        withExtendedLifetime(held) {}
        try await daemon.stop()
    }

    /// sshd's MaxStartups, PostgreSQL's reserved connections: 300 connections that never say
    /// Hello, from the same user, keep nobody out; the oldest of them are pushed out instead.
    @Test func silentConnectionsCannotLockAUserOut() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, limits: #"{"maxUnauthenticatedConnections":16}"#)
        let silent = try (0..<300).map { _ in try RawConnection(path: scratch.socket) }
        let put = try await syncctl(["put", "x", "1"], scratch: scratch)
        #expect(put.status == 0, "\(put.stderr)")
        // The oldest were pushed out, each told why; at most 16 still wait.
        let fatal = try RawConnection.fatalError(in: await silent[0].readUntilClosed())
        #expect(fatal?.code == .limitReached)
        #expect(fatal?.message.contains("16 connections were waiting to say Hello, the limit; this was the oldest") == true)
        let status = try await syncctl(["--json", "status"], scratch: scratch)
        let clients = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])["clients"] as? Int
        #expect(try #require(clients) <= 17)
        withExtendedLifetime(silent) {}
        #expect(try await syncctl(["get", "x"], scratch: scratch).stdout == "1\n")
        try await daemon.stop()
    }

    @Test func administratorsHavePlacesOfTheirOwn() async throws {
        let scratch = try Scratch()
        // The tests run as root: with no place left for others, root still gets in, up to the reserve.
        let daemon = try await daemon(scratch, limits: #"{"maxConnections":2,"reservedAdministratorConnections":1}"#)
        let held = try (0..<2).map { _ in try RawConnection(path: scratch.socket) }
        let greetings = [try await held[0].greet(), try await held[1].greet()]
        #expect(greetings == [true, true])
        let silent = try RawConnection(path: scratch.socket)
        // syncctl takes the place kept for administrators, and shows who holds which place (once
        // syncd has accepted the silent connection, which connecting does not wait for).
        var admissions: [String?] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while admissions.count < 4, ContinuousClock.now < deadline {
            let clients = try await syncctl(["--json", "clients"], scratch: scratch)
            let listed = try #require(try JSONSerialization.jsonObject(with: Data(clients.stdout.utf8)) as? [[String: Any]])
            admissions = listed.map { $0["admission"] as? String }
        }
        #expect(admissions == ["client", "client", "waitingForHello", "reserved"])
        // Once syncd has seen syncctl go, the reserved place is free again for another of root's.
        var third: RawConnection?
        while third == nil, ContinuousClock.now < deadline {
            let candidate = try RawConnection(path: scratch.socket)
            if try await candidate.greet() { third = candidate } else { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(third != nil)
        let refused = try RawConnection(path: scratch.socket)
        refused.sendHello()
        #expect(
            try RawConnection.fatalError(in: await refused.readUntilClosed())?.message.contains("2 clients connected, its limit") == true)
        withExtendedLifetime((held, silent, third)) {}
        try await daemon.stop()
    }

    @Test func watchesPerConnectionAreLimited() async throws {
        let scratch = try Scratch()
        let daemon = try await daemon(scratch, limits: #"{"maxWatchesPerConnection":2}"#)
        let client = try await SharedStateClient.connect(.init(socketPath: scratch.socket))
        let first = client.watch(prefixes: ["a/"])
        let second = client.watch(prefixes: ["b/"])
        _ = try await client.status()
        do {
            for try await _ in client.watch(prefixes: ["c/"]) {}
            Issue.record("a third watch must be refused")
        } catch let error as SharedStateError {
            #expect(error.code == .limitReached)
            #expect(error.message.contains("2 watches"))
        }
        // The refusal ended nothing else.
        #expect(try await client.status().watches == 2)
        withExtendedLifetime((first, second)) {}
        try await daemon.stop()
    }
}
