import NIOCore
import SharedStateWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The socket call the client makes itself, outside NIO: connecting the socket it then hands to
/// NIO (it writes to it from the caller's thread by ``DirectSocketWrites``, see ``OutboundQueue``).
enum UnixSocket {
    /// A non-blocking stream socket connected to `path`.
    ///
    /// - Throws: The `errno` of the call that failed, as a sentence (`strerror`).
    static func connectedSocket(to path: String) throws(UnixSocketError) -> CInt {
        // A file's path, as NIO took it: syncd binds its socket to a file.
        guard let address = UnixSocketAddress(path: path, abstractNames: false) else {
            throw UnixSocketError(
                description: "the path is \(path.utf8.count) bytes, longer than a socket path may be (\(UnixSocketAddress.maxPathBytes))",
                isAboutThePath: true)
        }
        let descriptor = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue) | CInt(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw UnixSocketError(errno: errno) }
        guard address.withSocketAddress({ connect(descriptor, $0, $1) }) == 0 else {
            let code = errno
            close(descriptor)
            // Not a question of whether syncd runs: of who may talk to it.
            if code == EACCES { throw UnixSocketError(description: SocketPermission.refusal(of: path), isAboutThePath: true) }
            throw UnixSocketError(errno: code)
        }
        return descriptor
    }
}

/// Why a socket call failed.
struct UnixSocketError: Error, CustomStringConvertible {
    let description: String
    /// Whether the path itself is wrong, whatever runs at it.
    let isAboutThePath: Bool
}

extension UnixSocketError {
    init(errno code: CInt) {
        description = String(cString: strerror(code))
        isAboutThePath = false
    }
}
