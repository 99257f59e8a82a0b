import SyncEngine

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The listening socket systemd passed to syncd (`LISTEN_FDS`, `LISTEN_PID`, `LISTEN_FDNAMES`), if
/// any: with socket activation clients can connect before syncd has finished starting.
enum SocketActivation {
    /// The first passed descriptor is always 3.
    static let firstDescriptor: Int32 = 3

    /// The passed socket to listen on, or nil when syncd was not socket-activated.
    ///
    /// With several sockets, the one named `syncd` in `LISTEN_FDNAMES` is used, else the first.
    /// The variables are removed so that processes syncd might start do not inherit them.
    ///
    /// - Throws: ``DaemonStartError`` when the variables are malformed or the descriptor is not a
    ///   listening Unix stream socket.
    static func passedSocket(environment: [String: String]) throws -> Int32? {
        guard let pid = environment["LISTEN_PID"], let count = environment["LISTEN_FDS"] else { return nil }
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        guard Int32(pid) == getpid() else { return nil }
        guard let count = Int32(count), count >= 1 else {
            throw DaemonStartError("LISTEN_FDS=\(count) names no socket")
        }
        let names = environment["LISTEN_FDNAMES"]?.split(separator: ":", omittingEmptySubsequences: false).map(String.init) ?? []
        let index = names.firstIndex(of: "syncd").map(Int32.init) ?? 0
        let descriptor = firstDescriptor + min(index, count - 1)
        try checkListeningUnixStream(descriptor)
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        return descriptor
    }

    private static func checkListeningUnixStream(_ descriptor: Int32) throws {
        var type: Int32 = 0
        var domain: Int32 = 0
        var listening: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else {
            throw DaemonStartError("passed descriptor \(descriptor) is not a socket")
        }
        length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_DOMAIN, &domain, &length)
        length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length)
        guard domain == AF_UNIX, type == Int32(SOCK_STREAM.rawValue), listening == 1 else {
            throw DaemonStartError("passed descriptor \(descriptor) is not a listening Unix stream socket (ListenStream= a path)")
        }
    }

    /// The filesystem path a listening Unix socket is bound to, for logs and status.
    static func path(of descriptor: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0 else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { bytes in
            String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }
}
