import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Host A's syncd in a network namespace of its own, reaching the 3-member cluster over one veth
/// link; host B on loopback. Taking A's link down is a real partition: A's packets are dropped,
/// nothing is refused, so syncd must notice by itself.
@Suite(
    .enabled(if: EtcdCluster.isEnabled, "SHAREDSTATE_ETCD_TESTS=1 runs the etcd suites (.ci/run does)"),
    .enabled("needs root, iproute2 and the right to make a network namespace") { await NetworkNamespace.isAvailable() },
    .timeLimit(.minutes(4))
)
struct EtcdPartitionTests {

    /// While A is cut off: its writes fail with `unavailable` (never queued by syncd), its reads serve
    /// what it had, its status says it is stale; B goes on, and sees A's presence go once A's
    /// lease expires. Once the link is back: A catches up by itself, its watcher gets every
    /// revision it missed in order, and A's process has its presence back.
    @Test func aPartitionedHostServesReadsRefusesWritesAndCatchesUpWhenHealed() async throws {
        let namespace = try await NetworkNamespace()
        let cluster = try await EtcdCluster(scratch: try Scratch(), alsoListeningOn: namespace.outsideAddress)
        let (a, b) = (try Scratch(), try Scratch())
        let backend = ["--backend", "etcd", "--etcd-prefix", "/test/", "--etcd-lease-ttl", "2"]
        let hostA = try await DaemonProcess(
            a, extraArguments: backend + ["--etcd-endpoints", cluster.endpoints(at: namespace.outsideAddress)],
            launcher: namespace.launcher)
        let hostB = try await DaemonProcess(b, extraArguments: backend + ["--etcd-endpoints", cluster.endpoints])

        #expect(try await syncctl(["put", "zone/0", "0"], scratch: b).status == 0)
        let watchA = try await startWatch(["zone/", "--snapshot"], scratch: a)
        try await waitForWatches(1, scratch: a)
        let presence = try await startWatch(["presence/"], scratch: b)
        try await waitForWatches(1, scratch: b)
        let holder = try await ChildProcess(
            try Binaries.path("syncctl"), ["--socket", a.socket, "put", "presence/kiosk-a", "true", "--ephemeral", "--hold"],
            scratch: a, name: "holder")
        try await eventually("the holder's put") { holder.stdout.contains("OK revision") }

        try await namespace.partition()
        let cut = ContinuousClock.now
        // A write on A fails, and says why. syncd does not keep it to apply later; but its request
        // may already sit in the kernel's queue for the link, and reach etcd once the link is
        // back, and the answer says so.
        let refused = try await syncctl(["put", "zone/lost", "1"], scratch: a)
        let refusal = ContinuousClock.now - cut
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("unavailable") || refused.stderr.contains("etcd"), "\(refused.stderr)")
        let mayApply = refused.stderr.contains("may or may not have been applied")
        #expect(refusal < .seconds(16), "a write took \(refusal) to fail on a partitioned host")
        // Reads on A serve what it had.
        #expect(try await syncctl(["get", "zone/0"], scratch: a).stdout == "0\n")
        try await eventuallyAsync("host A to say it is stale") {
            try await syncctl(["--json", "status"], scratch: a).stdout.contains(#""staleSince""#)
        }
        let noticed = ContinuousClock.now - cut
        // B goes on; A's presence goes once its lease expires.
        for index in 1...5 {
            #expect(try await syncctl(["put", "zone/\(index)", "\(index)"], scratch: b).status == 0)
        }
        try await eventually("A's presence gone on host B") { presence.stdout.contains(#""type":"delete""#) }

        try await namespace.heal()
        let healed = ContinuousClock.now
        try await eventuallyAsync("host A caught up") {
            try await syncctl(["--json", "status"], scratch: a).stdout.contains(#""caughtUp":true"#)
        }
        let caughtUp = ContinuousClock.now - healed
        #expect(try await syncctl(["put", "zone/6", "6"], scratch: a).status == 0)
        #expect(try await syncctl(["list", "zone/"], scratch: a).stdout == (try await syncctl(["list", "zone/"], scratch: b).stdout))
        let applied = try await syncctl(["get", "zone/lost"], scratch: b).status == 0
        #expect(!applied || mayApply, "a write refused outright was applied: \(refused.stderr)")
        try await eventually("A's watcher at zone/6") { watchA.stdout.contains(#""key":"zone/6""#) }
        let lines = try watchLines(watchA.stdout)
        #expect(lines.map(\.key).filter { $0 != "zone/lost" } == (0...6).map { "zone/\($0)" })
        #expect(lines.contains { $0.key == "zone/lost" } == applied)
        #expect(zip(lines, lines.dropFirst()).allSatisfy { $1.revision > $0.revision })
        // The expired session was closed: its client reconnected and put its presence back.
        try await eventuallyAsync("A's presence back on host B") {
            try await syncctl(["get", "presence/kiosk-a"], scratch: b).status == 0
        }
        #expect(holder.isRunning)
        print("partition: a write failed after \(refusal), A said stale after \(noticed), caught up \(caughtUp) after the link was back")

        for process in [watchA, presence, holder] {
            process.signal(SIGKILL)
            _ = try await process.waitForExit()
        }
        try await hostA.stop()
        try await hostB.stop()
        await namespace.remove()
    }
}
