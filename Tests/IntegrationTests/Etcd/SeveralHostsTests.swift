import Foundation
import SyncClient
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Two or three syncd ("hosts", each with its own socket) on one real 3-member etcd cluster:
/// feature processes on different hosts converge, a CAS counter is exact, presence ends with its
/// host, and the hosts ride out a stopped cluster by themselves.
@Suite(.enabled(if: EtcdCluster.isEnabled, "SHAREDSTATE_ETCD_TESTS=1 runs the etcd suites (.ci/run does)"), .timeLimit(.minutes(4)))
struct SeveralHostsTests {
    /// A host: a scratch directory (its socket and lock) and the syncd on it, and the cluster
    /// it uses, kept alive as long as the host.
    private struct Host {
        let cluster: EtcdCluster
        let scratch: Scratch
        let daemon: DaemonProcess
        var socket: String { scratch.socket }
    }

    /// A new 3-member cluster and two hosts on it.
    private func twoHosts() async throws -> (EtcdCluster, Host, Host) {
        let cluster = try await EtcdCluster(scratch: try Scratch())
        let a = try Scratch()
        let b = try Scratch()
        return (
            cluster, Host(cluster: cluster, scratch: a, daemon: try await host(a, on: cluster)),
            Host(cluster: cluster, scratch: b, daemon: try await host(b, on: cluster))
        )
    }

    /// A syncd on the etcd backend, on its own scratch directory's socket.
    private func host(_ scratch: Scratch, on cluster: EtcdCluster, leaseTTL: Int = 2) async throws -> DaemonProcess {
        try await DaemonProcess(
            scratch,
            extraArguments: [
                "--backend", "etcd", "--etcd-endpoints", cluster.endpoints, "--etcd-prefix", "/test/",
                "--etcd-lease-ttl", "\(leaseTTL)",
            ])
    }

    /// 1. A's writes reach B's watcher in revision order, with no gap and no duplicate; a sensor
    /// on A and a thermostat on B cooperate as they do on one host.
    @Test func hostsConvergeAndAWatcherOnBSeesAsWritesInOrder() async throws {
        let (_, a, b) = try await twoHosts()
        let (hostA, hostB) = (a.daemon, b.daemon)

        let watch = try await startWatch(["door/", "--count", "60"], scratch: b.scratch)
        try await waitForWatches(1, scratch: b.scratch)
        for index in 0..<60 {
            let put = try await syncctl(["put", "door/\(index % 7)", "\(index)"], scratch: a.scratch)
            #expect(put.status == 0, "\(put.stderr)")
        }
        #expect(try await watch.waitForExit(timeout: .seconds(30)) == 0)
        let lines = try watchLines(watch.stdout)
        #expect(lines.count == 60)
        // Only these writes go to the cluster: etcd's revisions follow each other.
        #expect(zip(lines, lines.dropFirst()).allSatisfy { $1.revision == $0.revision + 1 })
        #expect(
            try await syncctl(["list", "door/"], scratch: a.scratch).stdout
                == (try await syncctl(["list", "door/"], scratch: b.scratch).stdout))
        // A consistent read on B sees a write acknowledged on A, whatever B has applied yet.
        for value in 100..<110 {
            _ = try await syncctl(["put", "door/last", "\(value)"], scratch: a.scratch)
            #expect(try await syncctl(["get", "--consistent", "door/last"], scratch: b.scratch).stdout == "\(value)\n")
        }
        #expect(try await syncctl(["get", "--consistent", "door/none"], scratch: b.scratch).status == 2)

        let thermostat = try await startFeature("climate-thermostat", ["--band", "0.5"], scratch: b.scratch)
        let sensor = try await startFeature(
            "climate-sensor", ["--name", "kitchen", "--base-celsius", "18", "--interval-ms", "5", "--readings", "40"], scratch: a.scratch)
        #expect(try await sensor.waitForExit(timeout: .seconds(60)) == 0)
        let reading = try #require(try await jsonObject("climate/sensors/kitchen", scratch: b.scratch))
        #expect(reading["sequence"] as? Int == 40)
        // The thermostat on B decided from A's readings; A sees its decision.
        try await eventuallyAsync("the heater on host A") {
            try await jsonObject("climate/heater", scratch: a.scratch)?["mode"] as? String == "heating"
        }
        thermostat.signal(SIGTERM)
        _ = try await thermostat.waitForExit()
        try await hostA.stop()
        try await hostB.stop()
    }

    /// 2. Four writers on each host increment one key with `update {}`: etcd decides every
    /// compare once, so the count is exact and every version appears once in the history.
    @Test func aCASCounterIncrementedFromTwoHostsIsExact() async throws {
        let (_, a, b) = try await twoHosts()
        let (hostA, hostB) = (a.daemon, b.daemon)
        let perWriter = Int(ProcessInfo.processInfo.environment["TEST_ETCD_INCREMENTS"] ?? "") ?? 500
        let counter = SharedKey<Int>("counter/value", default: 0)
        let start = try await SharedStateClient.connect(.init(socketPath: b.socket)).status().revision

        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                let socket = writer < 4 ? a.socket : b.socket
                group.addTask {
                    let client = try await SharedStateClient.connect(.init(socketPath: socket, clientName: "writer-\(writer)"))
                    for _ in 0..<perWriter {
                        try await client.update(counter, maxAttempts: 100_000) { $0 += 1 }
                    }
                    await client.close()
                }
            }
            try await group.waitForAll()
        }
        let total = 8 * perWriter
        #expect(try await syncctl(["get", "counter/value"], scratch: a.scratch).stdout == "\(total)\n")
        #expect(try await syncctl(["get", "counter/value"], scratch: b.scratch).stdout == "\(total)\n")
        let history = try await syncctl(
            ["--json", "watch", "counter/", "--from-revision", "\(start)", "--count", "\(total)"], scratch: b.scratch)
        #expect(history.status == 0, "\(history.stderr)")
        let versions = try watchLines(history.stdout).map(\.version)
        #expect(versions == Array(1...UInt64(total)))
        try await hostA.stop()
        try await hostB.stop()
    }

    /// 3. A schema set on host A governs writes on host B once its revision reached B, and a
    /// host that starts later reads it from the cluster.
    @Test func aSchemaSetOnOneHostGovernsWritesOnEvery() async throws {
        let (cluster, a, b) = try await twoHosts()
        let set = try await syncctl(["schema", "set", "lamp/", "-"], scratch: a.scratch, stdin: #"{"type":"boolean"}"#)
        #expect(set.status == 0, "\(set.stderr)")
        try await eventuallyAsync("the schema on host B") {
            try await syncctl(["schema", "get", "lamp/"], scratch: b.scratch).status == 0
        }
        let refused = try await syncctl(["put", "lamp/hall", "1"], scratch: b.scratch)
        #expect(refused.status == 6)
        #expect(refused.stderr == "syncctl: lamp/hall: the value is 1, an integer, not a boolean\n")
        #expect(try await syncctl(["put", "lamp/hall", "true"], scratch: b.scratch).status == 0)
        // Values on the cluster are checked too: A refuses a schema B's write breaks, once it has it.
        try await eventuallyAsync("B's write on host A") {
            try await syncctl(["get", "lamp/hall"], scratch: a.scratch).stdout == "true\n"
        }
        let broken = try await syncctl(["schema", "set", "lamp/", "-"], scratch: a.scratch, stdin: #"{"type":"string"}"#)
        #expect(broken.status == 6)
        #expect(broken.stderr.contains("lamp/hall: the value is true, a boolean, not a string"))

        let lateScratch = try Scratch()
        let late = try await host(lateScratch, on: cluster)
        #expect(try await syncctl(["put", "lamp/den", #""on""#], scratch: lateScratch).status == 6)
        try await late.stop()
        try await a.daemon.stop()
        try await b.daemon.stop()
    }

    /// 4. A host killed while a process on it holds presence: the other host's watcher sees the
    /// key deleted once the host's lease expires.
    @Test func presenceOfAKilledHostEndsWithinTheLeaseTTL() async throws {
        let (_, a, b) = try await twoHosts()
        let (hostA, hostB) = (a.daemon, b.daemon)
        let watch = try await startWatch(["presence/", "--count", "4"], scratch: b.scratch)
        try await waitForWatches(1, scratch: b.scratch)
        let holder = try await ChildProcess(
            try Binaries.path("syncctl"), ["--socket", a.socket, "put", "presence/kiosk-a", "true", "--ephemeral", "--hold"],
            scratch: a.scratch, name: "holder")
        try await eventually("the holder's put") { holder.stdout.contains("OK revision") }
        // A process that ends on a live host loses its key at once: its lease is revoked.
        let brief = try await ChildProcess(
            try Binaries.path("syncctl"), ["--socket", b.socket, "put", "presence/kiosk-b", "true", "--ephemeral", "--hold"],
            scratch: b.scratch, name: "brief")
        try await eventually("the second holder's put") { brief.stdout.contains("OK revision") }
        brief.signal(SIGKILL)
        _ = try await brief.waitForExit()
        try await eventually(timeout: .seconds(2), "kiosk-b's delete") {
            watch.stdout.components(separatedBy: #""type":"delete""#).count == 2
        }

        hostA.child.signal(SIGKILL)
        let killed = ContinuousClock.now
        _ = try await hostA.child.waitForExit()
        #expect(try await watch.waitForExit(timeout: .seconds(10)) == 0)
        let gone = ContinuousClock.now - killed
        let lines = try watchLines(watch.stdout)
        #expect(lines.map(\.type) == ["put", "put", "delete", "delete"])
        #expect(lines.last?.key == "presence/kiosk-a")
        #expect(gone < .seconds(3), "presence outlived its host by \(gone); the lease TTL is 2 s")
        holder.signal(SIGKILL)
        _ = try await holder.waitForExit()
        try await hostB.stop()
    }

    /// 4b. A host's syncd killed and started again while a process on it holds presence: the new
    /// syncd revokes the dead one's leases before it serves (they are in its lease ledger), so
    /// the process puts its key back as soon as it reconnects, long before the lease's TTL; a
    /// watcher on the other host sees it deleted and put again, in order. The same after SIGTERM.
    @Test func presenceComesBackWhenAHostsSyncdRestarts() async throws {
        let cluster = try await EtcdCluster(scratch: try Scratch())
        let (a, b) = (try Scratch(), try Scratch())
        // A TTL longer than the test waits: only the revocation can free the key in time.
        var hostA = try await host(a, on: cluster, leaseTTL: 30)
        let hostB = try await host(b, on: cluster)
        let watch = try await startWatch(["presence/", "--count", "5"], scratch: b)
        try await waitForWatches(1, scratch: b)
        let holder = try await ChildProcess(
            try Binaries.path("syncctl"), ["--socket", a.socket, "put", "presence/door-lock", "true", "--ephemeral", "--hold"],
            scratch: a, name: "holder")
        try await eventually("the holder's put") { holder.stdout.contains("OK revision") }

        for signal in [SIGKILL, SIGTERM] {
            hostA.child.signal(signal)
            _ = try await hostA.child.waitForExit()
            hostA = try await host(a, on: cluster, leaseTTL: 30)
            let restarted = ContinuousClock.now
            try await eventuallyAsync("presence back on host B after \(signal == SIGKILL ? "SIGKILL" : "SIGTERM")") {
                try await syncctl(["get", "presence/door-lock"], scratch: b).status == 0
            }
            let back = ContinuousClock.now - restarted
            #expect(back < .seconds(2), "presence came back \(back) after syncd was ready again")
        }
        #expect(try await watch.waitForExit(timeout: .seconds(10)) == 0)
        let lines = try watchLines(watch.stdout)
        #expect(lines.map(\.type) == ["put", "delete", "put", "delete", "put"])
        #expect(Set(lines.map(\.key)) == ["presence/door-lock"])
        #expect(holder.isRunning)
        holder.signal(SIGKILL)
        _ = try await holder.waitForExit()
        try await hostA.stop()
        try await hostB.stop()
    }

    /// 5. The whole cluster stops for a few seconds: writes fail with `unavailable` at once,
    /// reads serve the last state and `status` says since when it is stale; when the cluster
    /// is back, both hosts recover by themselves and their watchers end at the same state.
    @Test func bothHostsRecoverByThemselvesWhenTheClusterComesBack() async throws {
        let (cluster, a, b) = try await twoHosts()
        let (hostA, hostB) = (a.daemon, b.daemon)
        _ = try await syncctl(["put", "menu/soup", #""tomato""#], scratch: a.scratch)
        let watchA = try await startWatch(["menu/", "--snapshot"], scratch: a.scratch)
        let watchB = try await startWatch(["menu/", "--snapshot"], scratch: b.scratch)
        try await waitForWatches(1, scratch: a.scratch)
        try await waitForWatches(1, scratch: b.scratch)

        try await cluster.killAll()
        let refused = ContinuousClock.now
        let put = try await syncctl(["put", "menu/soup", #""leek""#], scratch: a.scratch)
        let refusal = ContinuousClock.now - refused
        #expect(put.status != 0)
        #expect(put.stderr.contains("unavailable") || put.stderr.contains("etcd"), "\(put.stderr)")
        #expect(refusal < .seconds(7), "a write took \(refusal) to fail while etcd was down")
        #expect(try await syncctl(["get", "menu/soup"], scratch: b.scratch).stdout == "\"tomato\"\n")
        try await eventuallyAsync("host B to say it is stale") {
            try await syncctl(["--json", "status"], scratch: b.scratch).stdout.contains(#""staleSince""#)
        }
        try await Task.sleep(for: .seconds(2))

        for index in cluster.members.indices { try await cluster.start(index) }
        try await cluster.waitUntilHealthy()
        try await eventuallyAsync("a write through host A") {
            try await syncctl(["put", "menu/soup", #""leek""#], scratch: a.scratch).status == 0
        }
        _ = try await syncctl(["put", "menu/bread", #""rye""#], scratch: b.scratch)
        try await eventuallyAsync("both hosts caught up") {
            let statusA = try await syncctl(["--json", "status"], scratch: a.scratch).stdout
            let statusB = try await syncctl(["--json", "status"], scratch: b.scratch).stdout
            return statusA.contains(#""caughtUp":true"#) && statusB.contains(#""caughtUp":true"#)
        }
        let listA = try await syncctl(["list", "menu/"], scratch: a.scratch).stdout
        #expect(listA == "menu/bread\t\"rye\"\nmenu/soup\t\"leek\"\n")
        #expect(try await syncctl(["list", "menu/"], scratch: b.scratch).stdout == listA)
        try await eventually("both watchers at the cluster's state") {
            watchA.stdout.contains(#""rye""#) && watchB.stdout.contains(#""rye""#)
        }
        for watch in [watchA, watchB] {
            let lines = try watchLines(watch.stdout)
            #expect(lines.map(\.key) == ["menu/soup", "menu/soup", "menu/bread"])
            #expect(zip(lines, lines.dropFirst()).allSatisfy { $1.revision > $0.revision })
            watch.signal(SIGTERM)
            _ = try await watch.waitForExit()
        }
        try await hostA.stop()
        try await hostB.stop()
    }

    /// 3. The etcd leader is SIGKILLed under the counter's load: no acknowledged increment is
    /// lost, writers see a short run of `unavailable` at most, and a watcher on the other host
    /// sees every version once, with no gap.
    @Test func killingTheEtcdLeaderUnderLoadLosesNoAcknowledgedWrite() async throws {
        let (cluster, a, b) = try await twoHosts()
        let (hostA, hostB) = (a.daemon, b.daemon)
        let counter = SharedKey<Int>("counter/value", default: 0)
        let watcher = try await SharedStateClient.connect(.init(socketPath: b.socket, clientName: "watcher"))
        let seen = SeenVersions()
        let versions = Task {
            for try await batch in watcher.watch(prefixes: ["counter/"], fromRevision: nil) {
                seen.versions.withLock { $0 += batch.changes.map(\.entry.version) }
            }
        }
        defer { versions.cancel() }
        try await Task.sleep(for: .milliseconds(200))

        let outcomes = WriteOutcomes()
        let (socketA, socketB) = (a.socket, b.socket)
        let writers = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    let socket = writer < 2 ? socketA : socketB
                    group.addTask {
                        let client = try await SharedStateClient.connect(.init(socketPath: socket, clientName: "writer-\(writer)"))
                        var run = 0
                        while outcomes.counts.withLock({ $0.acknowledged + $0.unavailable }) < 400 {
                            do {
                                try await client.update(counter, maxAttempts: 100_000) { $0 += 1 }
                                run = 0
                                outcomes.counts.withLock { $0.acknowledged += 1 }
                            } catch let error as SharedStateError where error.code == .unavailable {
                                run += 1
                                outcomes.counts.withLock {
                                    $0.unavailable += 1
                                    $0.longestRun = max($0.longestRun, run)
                                }
                                try await Task.sleep(for: .milliseconds(50))
                            }
                        }
                        await client.close()
                    }
                }
                try await group.waitForAll()
            }
        }
        try await Task.sleep(for: .seconds(1))
        try await cluster.kill(try await cluster.leaderIndex())
        try await writers.value
        let result = outcomes.counts.withLock { $0 }
        let value = Int(
            try await syncctl(["get", "counter/value"], scratch: b.scratch).stdout.trimmingCharacters(in: .whitespacesAndNewlines))!
        // Each acknowledged increment is in; one whose outcome etcd left unknown may be too.
        #expect(value >= result.acknowledged && value <= result.acknowledged + result.unavailable)
        #expect(result.longestRun <= 20, "a writer saw \(result.longestRun) unavailable in a row")
        try await eventually("the watcher on host B to see \(value) versions") {
            seen.versions.withLock { $0.count >= value }
        }
        #expect(seen.versions.withLock { $0 } == Array(1...UInt64(value)))
        await watcher.close()
        try await hostA.stop()
        try await hostB.stop()
    }

    /// 6. A third host started after 10,000 revisions and a compaction of etcd converges from a
    /// snapshot, and tells a watch that wants older revisions that they are compacted.
    @Test func aHostStartedAfterACompactionConvergesFromASnapshot() async throws {
        let clusterScratch = try Scratch()
        let cluster = try await EtcdCluster(scratch: clusterScratch)
        let a = try Scratch()
        let hostA = try await host(a, on: cluster)
        func put(_ count: Int, keys: Int) async throws {
            let bench = try await ChildProcess(
                try Binaries.path("syncctl"),
                [
                    "--socket", a.socket, "bench", "put", "--connections", "16", "--pipeline", "1", "--count", "\(count)", "--keys",
                    "\(keys)", "--value-size", "20",
                ],
                scratch: a, name: "bench")
            #expect(try await bench.waitForExit(timeout: .seconds(150)) == 0)
            print(bench.stdout)
        }
        let revisionOfA = { try await SharedStateClient.connect(.init(socketPath: a.socket)).status().revision }
        // Writes to distinct keys from several connections at once share revisions (group
        // commit); writes to one key each make their own.
        try await put(500, keys: 500)
        for _ in 0..<5 {
            let revision = try await revisionOfA()
            if revision >= 10_000 { break }
            try await put(10_000 - Int(revision), keys: 1)
        }
        let revision = try await revisionOfA()
        #expect(revision >= 10_000)
        let compact = try await cluster.etcdctl(["--endpoints", cluster.endpoints, "compact", "\(revision)"])
        #expect(compact.status == 0, "\(compact.stderr)")

        let c = try Scratch()
        let hostC = try await host(c, on: cluster)
        let listA = try await syncctl(["list", "bench/"], scratch: a).stdout
        #expect(listA.split(separator: "\n").count == 500)
        #expect(try await syncctl(["list", "bench/"], scratch: c).stdout == listA)
        #expect(try await syncctl(["get", "bench/7"], scratch: c).stdout == (try await syncctl(["get", "bench/7"], scratch: a).stdout))
        let old = try await syncctl(["watch", "--from-revision", "5"], scratch: c)
        #expect(old.status != 0 && old.stderr.contains("compacted"), "\(old.stderr)")
        // And it follows what comes next.
        _ = try await syncctl(["put", "bench/7", "\"after\""], scratch: a)
        try await eventuallyAsync("host C to see the write") {
            try await syncctl(["get", "bench/7"], scratch: c).stdout == "\"after\"\n"
        }
        try await hostA.stop()
        try await hostC.stop()
    }
}

/// The versions a watcher of the leader-kill test saw.
private final class SeenVersions: Sendable {
    let versions = Mutex<[UInt64]>([])
}

/// What the writers of the leader-kill test saw.
private final class WriteOutcomes: Sendable {
    let counts = Mutex<(acknowledged: Int, unavailable: Int, longestRun: Int)>((0, 0, 0))
}
