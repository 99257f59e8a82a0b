import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A network namespace joined to this one by a veth pair, so that a process run inside it (a
/// "host") reaches the rest only over that link, and taking the link down is a real partition:
/// packets are dropped, nothing is refused. Unix sockets are files, not network: syncctl still
/// reaches a syncd inside through its socket.
///
/// Needs root, iproute2 (`.ci/run` installs it) and the right to make network namespaces;
/// removed when released.
final class NetworkNamespace {
    /// Whether namespaces can be made here: root, `ip`, and the right to make one (a container
    /// may not have it); tried once.
    static let isAvailable: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: ip) else { return false }
        let probe = "ss-probe-\(getpid())"
        guard (try? run(["netns", "add", probe])) != nil else { return false }
        try? run(["netns", "del", probe])
        return true
    }()

    private static let ip = "/usr/sbin/ip"

    let name: String
    /// The veth end on this side.
    private let link: String
    /// The address of this side of the link: what a process inside reaches the cluster at.
    let outsideAddress: String
    /// The address of the inside of the link.
    let insideAddress: String

    init() throws {
        let tag = String(UInt32.random(in: 0..<UInt32.max), radix: 16)
        name = "ss-\(tag)"
        link = "ssv\(tag)"
        // A /30 of 10.x.y.0 picked at random, unlikely to meet another test's.
        let (x, y) = (Int.random(in: 200...250), Int.random(in: 0...63) * 4)
        outsideAddress = "10.\(x).\(y).1"
        insideAddress = "10.\(x).\(y).2"
        try Self.run(["netns", "add", name])
        do {
            try Self.run(["link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", name])
            try Self.run(["addr", "add", "\(outsideAddress)/30", "dev", link])
            try Self.run(["link", "set", link, "up"])
            try Self.run(["netns", "exec", name, Self.ip, "addr", "add", "\(insideAddress)/30", "dev", "eth0"])
            try Self.run(["netns", "exec", name, Self.ip, "link", "set", "eth0", "up"])
            try Self.run(["netns", "exec", name, Self.ip, "link", "set", "lo", "up"])
        } catch {
            try? Self.run(["link", "del", link])
            try? Self.run(["netns", "del", name])
            throw error
        }
    }

    /// The command that runs what follows it inside the namespace.
    var launcher: [String] { [Self.ip, "netns", "exec", name] }

    /// Cuts the link: from now on the namespace's packets are dropped.
    func partition() throws { try Self.run(["link", "set", link, "down"]) }

    /// Restores the link.
    func heal() throws { try Self.run(["link", "set", link, "up"]) }

    deinit {
        try? Self.run(["link", "del", link])
        try? Self.run(["netns", "del", name])
    }

    private static func run(_ arguments: [String]) throws {
        let errors = "/tmp/ssi-ip-\(UUID().uuidString.prefix(8)).err"
        defer { try? FileManager.default.removeItem(atPath: errors) }
        let pid = try Spawn.start(
            ip, arguments, environment: ProcessInfo.processInfo.environment, stdin: nil, stdoutPath: "/dev/null", stderrPath: errors)
        guard let status = Spawn.waitForExit(of: pid, timeout: .seconds(20)) else {
            throw TestFailure("ip \(arguments.joined(separator: " ")) did not finish within 20 s")
        }
        guard status == 0 else {
            let message = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw TestFailure("ip \(arguments.joined(separator: " ")) failed: \(message)")
        }
    }
}
