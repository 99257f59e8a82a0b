import Foundation
import Synchronization

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
    static func isAvailable() async -> Bool {
        if let known = availability.withLock({ $0 }) { return known }
        var available = false
        if getuid() == 0, FileManager.default.isExecutableFile(atPath: ip) {
            let probe = "ss-probe-\(getpid())"
            available = (try? await run(["netns", "add", probe])) != nil
            if available { try? await run(["netns", "del", probe]) }
        }
        availability.withLock { $0 = available }
        return available
    }

    private static let availability = Mutex<Bool?>(nil)
    private static let ip = "/usr/sbin/ip"

    let name: String
    /// The veth end on this side.
    private let link: String
    /// The address of this side of the link: what a process inside reaches the cluster at.
    let outsideAddress: String
    /// The address of the inside of the link.
    let insideAddress: String
    private var isRemoved = false

    init() async throws {
        let tag = String(UInt32.random(in: 0..<UInt32.max), radix: 16)
        name = "ss-\(tag)"
        link = "ssv\(tag)"
        // A /30 of 10.x.y.0 picked at random, unlikely to meet another test's.
        let (x, y) = (Int.random(in: 200...250), Int.random(in: 0...63) * 4)
        outsideAddress = "10.\(x).\(y).1"
        insideAddress = "10.\(x).\(y).2"
        try await Self.run(["netns", "add", name])
        do {
            try await Self.run(["link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", name])
            try await Self.run(["addr", "add", "\(outsideAddress)/30", "dev", link])
            try await Self.run(["link", "set", link, "up"])
            try await Self.run(["netns", "exec", name, Self.ip, "addr", "add", "\(insideAddress)/30", "dev", "eth0"])
            try await Self.run(["netns", "exec", name, Self.ip, "link", "set", "eth0", "up"])
            try await Self.run(["netns", "exec", name, Self.ip, "link", "set", "lo", "up"])
        } catch {
            try? await Self.run(["link", "del", link])
            try? await Self.run(["netns", "del", name])
            throw error
        }
    }

    /// The command that runs what follows it inside the namespace.
    var launcher: [String] { [Self.ip, "netns", "exec", name] }

    /// Cuts the link: from now on the namespace's packets are dropped.
    func partition() async throws { try await Self.run(["link", "set", link, "down"]) }

    /// Restores the link.
    func heal() async throws { try await Self.run(["link", "set", link, "up"]) }

    /// Removes the link and the namespace.
    func remove() async {
        guard !isRemoved else { return }
        isRemoved = true
        try? await Self.run(["link", "del", link])
        try? await Self.run(["netns", "del", name])
    }

    deinit {
        // A test that ended early (a failure thrown) did not remove it: done in the background.
        guard !isRemoved else { return }
        Task.detached { [link, name] in
            try? await NetworkNamespace.run(["link", "del", link])
            try? await NetworkNamespace.run(["netns", "del", name])
        }
    }

    private static func run(_ arguments: [String]) async throws {
        let result = try await Command.run(ip, arguments, timeout: .seconds(20))
        guard result.status == 0 else {
            throw TestFailure("ip \(arguments.joined(separator: " ")) failed: \(result.errors)")
        }
    }
}
