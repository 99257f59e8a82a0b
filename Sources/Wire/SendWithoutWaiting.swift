#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes to the stream socket `descriptor` as much of `bytes` as it takes now: the bytes
/// written, or -1 with `errno` set. It never waits and never raises `SIGPIPE` for a peer that
/// left. syncd's connections and the client's requests both write to their sockets with it while
/// nothing is queued for them in NIO.
@inlinable
package func sendWithoutWaiting(_ descriptor: CInt, _ bytes: UnsafeRawBufferPointer) -> Int {
    send(descriptor, bytes.baseAddress, bytes.count, CInt(MSG_NOSIGNAL) | CInt(MSG_DONTWAIT))
}
