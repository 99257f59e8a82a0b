import SharedStateWire

/// Where `syncctl inspect` listens: a loopback address only, since the page shows the state to
/// whoever reaches it (the token aside).
struct InspectorAddress: Equatable {
    /// As given: `127.0.0.1`, `::1` or `localhost`.
    var host: String
    /// 0 takes a free port.
    var port: Int

    /// Parses `HOST:PORT` (`[::1]:PORT` for IPv6).
    ///
    /// - Throws: ``Failure`` naming what is wrong: not `HOST:PORT`, or a host that is not loopback.
    init(parsing text: String) throws(Failure) {
        guard let address = HostAndPort(parsing: text) else {
            throw Failure("--address must be HOST:PORT with a port from 0 to 65535, like 127.0.0.1:8470, not \"\(text)\"")
        }
        let (host, port) = (address.host, address.port)
        guard Self.isLoopback(host) else {
            throw Failure(
                "--address: \(host) is not a loopback address; the inspector shows the state to whoever reaches it, "
                    + "so it listens on 127.0.0.1, ::1 or localhost only")
        }
        self.host = host
        self.port = port
    }

    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// The `Host` header values a browser sends for `port`, the port actually bound: any other is
    /// a page of another name resolving to this machine (DNS rebinding).
    static func acceptedHosts(port: Int, host: String) -> Set<String> {
        var hosts: Set<String> = ["localhost:\(port)", "127.0.0.1:\(port)", "[::1]:\(port)"]
        hosts.insert(host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
        return hosts
    }

    struct Failure: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }
}
