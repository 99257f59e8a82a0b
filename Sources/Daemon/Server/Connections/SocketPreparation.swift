import Foundation
import SharedStateWire
import SyncEngine

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Makes a socket path ready to bind: creates its directory, refuses a path another syncd is
/// serving, and removes a stale socket file left by one that died.
package enum SocketPreparation {
    /// - Throws: ``DaemonStartError`` naming the path when it is in use, is not a socket, or its
    ///   directory cannot be created.
    package static func prepare(_ path: String) throws {
        if path.utf8.count > UnixSocketAddress.maxPathBytes {
            throw DaemonStartError("socket path \(path) is too long for a Unix socket (at most \(UnixSocketAddress.maxPathBytes) bytes)")
        }
        try PrivateDirectory.createParent(of: path, purpose: "socket")
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard (status.st_mode & S_IFMT) == S_IFSOCK else {
            throw DaemonStartError("\(path) exists and is not a socket; remove it or choose another --socket")
        }
        if isAnswering(path) {
            throw DaemonStartError("another syncd is already listening on \(path)")
        }
        if unlink(path) != 0 {
            throw DaemonStartError("cannot remove stale socket \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Whether something accepts connections on the socket at `path`.
    static func isAnswering(_ path: String) -> Bool {
        #if canImport(Glibc) || canImport(Musl)
            let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0, let address = UnixSocketAddress(path: path) else { return false }
        defer { close(descriptor) }
        return address.withSocketAddress { connect(descriptor, $0, $1) } == 0
    }
}
