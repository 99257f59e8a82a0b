#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The address of a Unix socket: a filesystem path or, with a leading `@`, a name in Linux's
/// abstract namespace (as systemd writes `NOTIFY_SOCKET`). syncd and its client both build their
/// addresses with it.
package struct UnixSocketAddress: @unchecked Sendable {
    // @unchecked: `sockaddr_un` is a plain C struct of integers and bytes, never shared mutably.

    /// The longest path a socket address holds, in bytes (107 on Linux).
    package static let maxPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    private var storage = sockaddr_un()
    private let length: socklen_t

    /// The address of `path`, or nil when it is empty or longer than ``maxPathBytes``.
    /// - Parameter abstractNames: Whether a leading `@` names an abstract socket; when false it
    ///   is part of a file's name.
    package init?(path: String, abstractNames: Bool = true) {
        var bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxPathBytes else { return nil }
        let isAbstract = abstractNames && bytes[0] == UInt8(ascii: "@")
        if isAbstract { bytes[0] = 0 }
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { $0.copyBytes(from: bytes) }
        // Abstract names are not NUL-terminated: the length says where they end.
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (isAbstract ? 0 : 1))
    }

    /// Calls `body` with the address as the socket calls take it.
    package func withSocketAddress<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafePointer(to: storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
