import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Who is at the other end of a Unix socket, as the kernel reports it (`SO_PEERCRED`): the
/// process, user and group that connected. It cannot be forged by the client.
package struct PeerCredentials: Sendable, Hashable {
    var pid: Int32
    var uid: UInt32
    var gid: UInt32

    /// The credentials of `channel`'s peer, or nil when the platform does not report them.
    static func read(from channel: any Channel) -> EventLoopFuture<PeerCredentials?> {
        #if canImport(Glibc) || canImport(Musl)
            guard let provider = channel as? any SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
            let future: EventLoopFuture<KernelCredentials> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET),
                name: SocketOptionName(SO_PEERCRED)
            )
            return future.map { PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid) }.recover { _ in nil }
        #else
            return channel.eventLoop.makeSucceededFuture(nil)
        #endif
    }

    /// The layout of Linux's `struct ucred`, which Swift's Glibc module does not export.
    private struct KernelCredentials: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }
}
