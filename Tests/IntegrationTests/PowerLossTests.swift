import Foundation
import SyncClient
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Power cuts under load: syncd's database on a file system that loses whatever was never synced
/// (Tests/PowerLoss/lossyfs.py), writers acknowledged at full speed, the power cut at random
/// moments and after a quiet period, and what comes back checked against the README's promise:
/// `full` loses nothing acknowledged; `normal` loses only writes acknowledged less than the sync
/// interval (plus 0.5 s) before the cut; what survives is a prefix of the acknowledged history,
/// revision for revision, with no torn value.
///
/// A third case lets the file system write unsynced pages back on its own, in no order (as the
/// kernel does), so that a cut can leave a later page of the journal and not an earlier one, and
/// restarts syncd as after a reboot (`SYNCD_BOOT_ID`, honoured by debug builds): the hole must be
/// cut as a power cut's, with the same bound on what is lost.
///
/// A few cuts per mode run in every `swift test`; `POWER_CUTS=50` runs more.
@Suite(
    .timeLimit(.minutes(20)),
    .enabled(if: LossyFileSystem.isAvailable, "needs /dev/fuse and fusermount3 (apt-get install -y fuse3)")
)
struct PowerLossTests {
    static let cutsPerMode = Int(ProcessInfo.processInfo.environment["POWER_CUTS"] ?? "") ?? 3
    static let syncInterval = Duration.seconds(1)

    @Test(arguments: ["normal", "full", "normal, pages written back out of order"])
    func powerCutsLoseOnlyWhatThePromiseAllows(mode: String) async throws {
        let durability = mode.hasPrefix("full") ? "full" : "normal"
        let reorders = mode.contains("out of order")
        let scratch = try Scratch()
        let python = try await PythonEnvironment.prepare(scratch: scratch, also: ["mfusepy"], probing: "mfusepy")
        let disk = try await LossyFileSystem(scratch: scratch, python: python, writeback: reorders ? 0.03 : 0)
        let database = disk.mountpoint + "/db/state.sqlite"
        let arguments = ["--durability", durability, "--sync-interval", "1"]
        // Each start after a cut is a new boot, when pages reach the disk out of order.
        func boot() -> [String: String] {
            reorders
                ? ["SYNCD_BOOT_ID": String(format: "%016llx%016llx", UInt64.random(in: 1...UInt64.max), UInt64.random(in: 1...UInt64.max))]
                : [:]
        }
        var daemon = try await DaemonProcess(scratch, databasePath: database, extraArguments: arguments, environment: boot())
        var cutsWithAHole = 0
        var cutsWithATornEnd = 0
        var lostYoungest: Duration = .zero
        var lost = 0
        var acknowledgedInAll = 0
        for cut in 0..<Self.cutsPerMode {
            let isAfterQuiet = cut % 2 == 1
            let acknowledged = Collector<AcknowledgedPut>()
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Until the power is cut; after a quiet period, 2,000 first.
                try await group.addWriters(socket: scratch.socket, prefix: "p", connections: 3, lanes: 4) { put in
                    acknowledged.add(put)
                    return !isAfterQuiet || acknowledged.all.count <= 2_000
                }
                if isAfterQuiet {
                    // Sustained load, then quiet longer than the interval: nothing may be lost.
                    try await eventually("2,000 acknowledged writes") { acknowledged.all.count > 2_000 }
                    try await Task.sleep(for: Self.syncInterval + .milliseconds(600))
                } else {
                    try await Task.sleep(for: .milliseconds(Int.random(in: 300...2_000)))
                }
                let cutAt = ContinuousClock.now
                try await disk.cutPower()
                daemon.child.signal(SIGKILL)
                _ = try await daemon.child.waitForExit()
                try await group.waitForAll()
                try await disk.mount()
                daemon = try await DaemonProcess(scratch, databasePath: database, extraArguments: arguments, environment: boot())
                if daemon.child.stderr.contains("where the machine lost power") { cutsWithAHole += 1 }
                if daemon.child.stderr.contains("ended in a torn record") { cutsWithATornEnd += 1 }
                let check = try await check(acknowledged.all, cutAt: cutAt, scratch: scratch)
                #expect(check.lost.isEmpty || durability == "normal", "cut \(cut): \(check.lost.count) acknowledged writes lost")
                if isAfterQuiet { #expect(check.lost.isEmpty, "cut \(cut) after a quiet period lost \(check.lost.count)") }
                for write in check.lost {
                    let age = write.at.duration(to: cutAt)
                    #expect(age < Self.syncInterval + .milliseconds(500), "cut \(cut): a write acknowledged \(age) before the cut was lost")
                    lostYoungest = max(lostYoungest, age)
                }
                lost += check.lost.count
                acknowledgedInAll += acknowledged.all.count
            }
        }
        print(
            "power cuts, \(mode): \(Self.cutsPerMode) cuts (\(cutsWithAHole) left a hole in the journal, \(cutsWithATornEnd) a torn end), \(acknowledgedInAll) acknowledged, \(lost) lost, the oldest lost \(lostYoungest) before its cut"
        )
        try await daemon.stop()
    }

    /// The first start writes the schema and the link to its journal, then puts the journal in
    /// place: a power cut right after it (before any checkpoint) must leave files that start.
    /// With `full` the schema and the link were not synced at first (the connection was set to
    /// sync only after start-up wrote them), and the journal was refused as another database's.
    @Test(arguments: ["normal", "full"])
    func aPowerCutRightAfterTheFirstStartLeavesFilesThatStart(durability: String) async throws {
        let scratch = try Scratch()
        let python = try await PythonEnvironment.prepare(scratch: scratch, also: ["mfusepy"], probing: "mfusepy")
        let disk = try await LossyFileSystem(scratch: scratch, python: python)
        let database = disk.mountpoint + "/db/state.sqlite"
        let arguments = ["--durability", durability]
        let first = try await DaemonProcess(scratch, databasePath: database, extraArguments: arguments)
        try await disk.cutPower()
        first.child.signal(SIGKILL)
        _ = try await first.child.waitForExit()
        try await disk.mount()
        let second = try await DaemonProcess(scratch, databasePath: database, extraArguments: arguments)
        let put = try await syncctl(["put", "after/cut", "1"], scratch: scratch)
        #expect(put.status == 0, "\(put.stderr)")
        try await second.stop()
    }

    /// Replays the change log from revision 0 and checks `acknowledged` against it; returns the
    /// acknowledged writes it does not hold.
    private func check(_ acknowledged: [AcknowledgedPut], cutAt: ContinuousClock.Instant, scratch: Scratch) async throws -> (
        lost: [AcknowledgedPut], revision: UInt64
    ) {
        let reader = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "checker"))
        let listing = try await reader.list(prefix: "p/")
        let revision = listing.revision
        var replayed: [UInt64: Change] = [:]
        var latest: [String: Data] = [:]
        // A watch whose reader falls behind gets a resync that folds what it missed: read on from
        // the last revision seen with a new watch, until the last revision.
        var cursor: UInt64 = 0
        replaying: while cursor < revision {
            for try await batch in reader.watch(prefixes: ["p/"], fromRevision: cursor) {
                if batch.kind == .resync { continue replaying }
                guard batch.kind == .changes else { continue }
                for change in batch.changes {
                    #expect(replayed[batch.revision] == nil, "two changes at revision \(batch.revision)")
                    replayed[batch.revision] = change
                    latest[change.key] = change.entry.value
                }
                cursor = batch.revision
                if batch.revision >= revision { break replaying }
            }
            break
        }
        await reader.close()
        // A prefix: every revision up to the last, once.
        #expect(replayed.keys.sorted() == Array(1...max(revision, 1)).prefix(Int(revision)).map { $0 })
        // The entries are what the log says, with no torn value.
        for entry in listing.entries { #expect(latest[entry.key] == entry.value, "\(entry.key) holds what its last change did not write") }
        var lost: [AcknowledgedPut] = []
        for write in acknowledged {
            guard write.revision <= revision else {
                lost.append(write)
                continue
            }
            let change = replayed[write.revision]
            #expect(
                change?.key == write.key && change.map { String(decoding: $0.entry.value, as: UTF8.self) } == "\(write.value)",
                "revision \(write.revision) does not hold the acknowledged \(write.key) = \(write.value)")
        }
        return (lost, revision)
    }
}

/// A FUSE mount of Tests/PowerLoss/lossyfs.py over a directory of the scratch: what is written
/// through it is held in the file system's process until synced; ``cutPower()`` kills that
/// process, which loses it, as a power cut does.
final class LossyFileSystem {
    let backing: String
    let mountpoint: String
    private let python: String
    private let scratch: Scratch
    private var process: ChildProcess?

    static var isAvailable: Bool {
        FileManager.default.fileExists(atPath: "/dev/fuse") && FileManager.default.isExecutableFile(atPath: "/usr/bin/fusermount3")
    }

    /// With probability `writeback` per write, one unsynced page of the file reaches the disk on
    /// its own (see lossyfs.py's `--writeback`).
    private let writeback: Double

    init(scratch: Scratch, python: String, writeback: Double = 0) async throws {
        self.scratch = scratch
        self.python = python
        self.writeback = writeback
        backing = scratch.file("disk")
        mountpoint = scratch.file("mount")
        for directory in [backing, mountpoint] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        try await mount()
    }

    private var isMounted: Bool {
        ((try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? "").contains(" \(mountpoint) fuse")
    }

    /// Mounts the file system, holding what `backing` holds.
    func mount() async throws {
        let script = PythonEnvironment.root + "/Tests/PowerLoss/lossyfs.py"
        let child = try await ChildProcess(
            python, [script, backing, mountpoint] + (writeback > 0 ? ["--writeback", "\(writeback)"] : []), scratch: scratch,
            name: "lossyfs")
        process = child
        try await eventually("the lossy file system to be mounted") {
            if !child.isRunning { throw TestFailure("lossyfs.py exited: \(child.stderr)") }
            return isMounted
        }
    }

    /// Kills the file system's process, losing every write not synced, and unmounts it.
    func cutPower() async throws {
        guard let process else { return }
        process.signal(SIGKILL)
        _ = try await process.waitForExit()
        self.process = nil
        umount2(mountpoint, Int32(MNT_DETACH))
    }

    deinit {
        process?.signal(SIGKILL)
        umount2(mountpoint, Int32(MNT_DETACH))
    }
}
