import EtcdClient
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real etcd cluster on loopback for one test: `size` members, each with its own data
/// directory and ports in the test's scratch directory; killed when released.
final class EtcdCluster {
    /// Where Debian's etcd-server puts the binary; `.ci/run` installs it.
    static let binary = "/usr/bin/etcd"
    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: binary) }
    /// The etcd suites run on their own, after the rest (`.ci/run` sets SHAREDSTATE_ETCD_TESTS=1
    /// for that run): inside the whole parallel suite on two cores, a first call to a new cluster
    /// once timed out. Perhaps a member could not bind a port another test's connection had taken
    /// (see ``reservePorts(_:)``, fixed since); running them with the rest needs a few runs to tell.
    static var isEnabled: Bool { ProcessInfo.processInfo.environment["SHAREDSTATE_ETCD_TESTS"] == "1" }

    struct Member {
        var name: String
        var clientPort: Int
        var peerPort: Int
        var clientURL: String { "http://127.0.0.1:\(clientPort)" }
        var peerURL: String { "http://127.0.0.1:\(peerPort)" }
    }

    let scratch: Scratch
    /// The members' data, on tmpfs: etcd syncs every commit to disk, which on a shared machine
    /// under a full test run took seconds; what is tested here is the protocol, not the disk.
    let dataDirectory = "/dev/shm/etcd-test-\(UUID().uuidString.prefix(8))"
    private(set) var members: [Member]
    private let token = "test-\(UUID().uuidString.prefix(8))"
    private(set) var processes: [ChildProcess?]
    /// Another address each member takes clients at, besides loopback.
    let extraAddress: String?

    /// Starts the members and waits until the cluster has a leader and takes writes.
    /// - Parameter extraAddress: Another address the members take clients at (the outside of a
    ///   ``NetworkNamespace``'s link).
    init(size: Int = 3, scratch: Scratch, alsoListeningOn extraAddress: String? = nil) async throws {
        guard Self.isInstalled else {
            throw TestFailure("etcd is not installed at \(Self.binary): apt-get install -y etcd-server (.ci/run does)")
        }
        self.scratch = scratch
        self.extraAddress = extraAddress
        members = []
        processes = Array(repeating: nil, count: size)
        // A port free when picked can be taken before the member binds it, by a process outside
        // this one; such a start is retried on new ports.
        for attempt in 1...3 {
            let ports = try Self.reservePorts(2 * size)
            members = (0..<size).map { Member(name: "m\($0)", clientPort: ports[2 * $0], peerPort: ports[2 * $0 + 1]) }
            for index in members.indices { try await start(index) }
            do {
                try await waitUntilHealthy()
                return
            } catch {
                let lostAPort = processes.contains { $0?.stderr.contains("address already in use") == true }
                guard lostAPort, attempt < 3 else { throw error }
                try await killAll()
                try? FileManager.default.removeItem(atPath: dataDirectory)
            }
        }
    }

    /// The members' client URLs, comma-separated, as `--etcd-endpoints` takes them.
    var endpoints: String { members.map(\.clientURL).joined(separator: ",") }

    /// The members' client URLs at `address` (given as `alsoListeningOn`), comma-separated.
    func endpoints(at address: String) -> String {
        members.map { "http://\(address):\($0.clientPort)" }.joined(separator: ",")
    }

    /// Starts member `index` again (with the data it had), after ``kill(_:)`` or ``stop(_:)``.
    func start(_ index: Int) async throws {
        let member = members[index]
        let initialCluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
        processes[index] = try await ChildProcess(
            Self.binary,
            [
                "--name", member.name, "--data-dir", dataDirectory + "/" + member.name,
                "--listen-client-urls",
                ([member.clientURL] + (extraAddress.map { ["http://\($0):\(member.clientPort)"] } ?? [])).joined(separator: ","),
                "--advertise-client-urls", member.clientURL,
                "--listen-peer-urls", member.peerURL, "--initial-advertise-peer-urls", member.peerURL,
                "--initial-cluster", initialCluster, "--initial-cluster-state", "new",
                "--initial-cluster-token", token,
                // Quick elections, so a killed leader is replaced within a second or so.
                "--heartbeat-interval", "50", "--election-timeout", "500",
                "--log-level", ProcessInfo.processInfo.environment["TEST_ETCD_LOG_LEVEL"] ?? "warn", "--logger", "zap",
            ],
            scratch: scratch, name: "etcd-\(member.name)")
    }

    deinit {
        processes = []  // each is killed as it goes
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }

    /// SIGKILLs member `index`.
    func kill(_ index: Int) async throws {
        guard let process = processes[index] else { return }
        process.signal(SIGKILL)
        _ = try await process.waitForExit()
        processes[index] = nil
    }

    /// SIGKILLs every member.
    func killAll() async throws {
        for index in members.indices { try await kill(index) }
    }

    /// The index of the member that leads, read with etcdctl from the members that answer.
    func leaderIndex() async throws -> Int {
        for (index, process) in processes.enumerated() where process != nil {
            let result = try await etcdctl(["--endpoints", members[index].clientURL, "endpoint", "status", "-w", "json"])
            guard result.status == 0, let data = result.stdout.data(using: .utf8),
                let statuses = try JSONSerialization.jsonObject(with: data) as? [[String: Any]],
                let status = statuses.first?["Status"] as? [String: Any],
                let leader = (status["leader"] as? NSNumber)?.uint64Value,
                let header = status["header"] as? [String: Any],
                let member = (header["member_id"] as? NSNumber)?.uint64Value
            else { continue }
            if leader == member { return index }
        }
        throw TestFailure("no member of the etcd cluster says it leads")
    }

    /// Waits until every running member answers `endpoint health`; throws at once when one of
    /// them has exited.
    func waitUntilHealthy(timeout: Duration = .seconds(30)) async throws {
        let running = members.indices.filter { processes[$0] != nil }.map { members[$0].clientURL }.joined(separator: ",")
        let deadline = ContinuousClock.now + timeout
        while true {
            let result = try await etcdctl(["--endpoints", running, "endpoint", "health"])
            if result.status == 0 { return }
            if let exited = processes.firstIndex(where: { $0?.isRunning == false }) {
                let logs = processes[exited]?.stderr.suffix(2_000) ?? ""
                throw TestFailure("etcd member \(members[exited].name) exited before the cluster was healthy: \(logs)")
            }
            if ContinuousClock.now > deadline {
                let logs = processes.compactMap { $0?.stderr.suffix(2_000) }.joined(separator: "\n---\n")
                throw TestFailure("the etcd cluster was not healthy within \(timeout): \(result.stderr)\n\(logs)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Runs etcdctl (v3 API) and waits for it.
    func etcdctl(_ arguments: [String]) async throws -> SyncctlResult {
        var environment = ProcessInfo.processInfo.environment
        environment["ETCDCTL_API"] = "3"
        let child = try await ChildProcess(
            "/usr/bin/etcdctl", ["--dial-timeout", "1s", "--command-timeout", "2s"] + arguments, scratch: scratch,
            name: "etcdctl", environment: environment)
        let status = try await child.waitForExit()
        return SyncctlResult(status: status, stdout: child.stdout, stderr: child.stderr)
    }

    /// Ports handed to a cluster in this process, never handed out again: clusters of tests
    /// running at once each check that a port is free before any of them binds it, so without
    /// this two of them could pick the same one (the etcd suite once failed that way).
    private static let reserved = Mutex<Set<Int>>([])

    /// `count` distinct ports free now and never reserved before in this process, below the
    /// kernel's range of ephemeral ports: a member restarted on its port must find it free, and an
    /// outgoing connection (syncd reconnecting while the member is down) takes its local port from
    /// that range. Picked at random, so test processes running at once are unlikely to meet.
    private static func reservePorts(_ count: Int) throws -> [Int] {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
            .split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let ephemeralStart = range?.first ?? 32_768
        return try reserved.withLock { reserved in
            var ports: [Int] = []
            for _ in 0..<10_000 where ports.count < count {
                let port = Int.random(in: 10_000..<ephemeralStart)
                if !reserved.contains(port) && isFree(port) {
                    reserved.insert(port)
                    ports.append(port)
                }
            }
            guard ports.count == count else { throw TestFailure("could not find \(count) free ports below \(ephemeralStart)") }
            return ports
        }
    }

    /// Whether a listening socket could be bound to `port` on every address now.
    private static func isFree(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = INADDR_ANY
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// Starts a cluster of `size` members and a client of it (with its connections running), runs
/// `body`, then closes the client and kills the cluster.
///
/// - Parameter callTimeout: The client's wait for an answer before it calls etcd unavailable;
///   a test of what etcd answers, not of when, gives a loaded machine more than the default.
func withEtcd(
    size: Int = 3, callTimeout: Duration = .seconds(5), _ body: (EtcdCluster, EtcdClient) async throws -> Void
) async throws {
    let scratch = try Scratch()
    let cluster = try await EtcdCluster(size: size, scratch: scratch)
    let etcd = try EtcdClient(endpoints: EtcdEndpoint.list(parsing: cluster.endpoints), callTimeout: callTimeout)
    try await withThrowingDiscardingTaskGroup { group in
        group.addTask { try await etcd.run() }
        defer { etcd.shutDown() }
        try await body(cluster, etcd)
    }
}
