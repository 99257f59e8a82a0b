import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes to a connection's socket directly, past NIO, while nothing handed to NIO earlier is
/// still unwritten: the one rule by which syncd's connections (D39) and the client's lone
/// requests (D40) write without waking, or waiting for, an event loop, and never overtake what
/// NIO holds.
///
/// A value kept where its owner keeps the rest of the connection's output (on the event loop in
/// syncd, under a lock in the client). Each hand-off to the channel is counted from
/// ``handedToChannel()`` until ``channelWroteHandOff()``, when NIO has written all of its bytes;
/// ``mayWriteDirectly`` holds only while none is.
package struct DirectSocketWrites: Sendable {
    /// Hand-offs to the channel whose bytes are not all in the socket yet.
    package private(set) var handOffsInChannel = 0

    package init() {}

    /// Whether bytes may go to the socket directly now: NIO holds nothing written before them.
    @inlinable
    package var mayWriteDirectly: Bool { handOffsInChannel == 0 }

    /// Counts a hand-off to the channel: direct writes wait until NIO has written it.
    package mutating func handedToChannel() { handOffsInChannel += 1 }

    /// Counts a hand-off written by NIO (or failed: the channel is closing).
    package mutating func channelWroteHandOff() {
        precondition(handOffsInChannel > 0, "a hand-off was reported written twice")
        handOffsInChannel -= 1
    }

    /// Writes what the socket takes of `bytes` now, by `send` (which returns the bytes written,
    /// or -1 with `errno` set, like `send(2)`), and moves their reader index past it. Returns
    /// whether it took all of it; the rest (a full socket, or an error the channel meets again
    /// and closes the connection for) goes through the channel. Only while ``mayWriteDirectly``.
    @inlinable
    package static func write(_ bytes: inout ByteBuffer, by send: (UnsafeRawBufferPointer) -> Int) -> Bool {
        while bytes.readableBytes > 0 {
            let written = bytes.withUnsafeReadableBytes(send)
            if written > 0 {
                bytes.moveReaderIndex(forwardBy: written)
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
}

/// Writes to the stream socket `descriptor` as much of `bytes` as it takes now: the bytes
/// written, or -1 with `errno` set. It never waits and never raises `SIGPIPE` for a peer that
/// left: the `send` of ``DirectSocketWrites/write(_:by:)`` for a real socket.
@inlinable
package func sendWithoutWaiting(_ descriptor: CInt, _ bytes: UnsafeRawBufferPointer) -> Int {
    send(descriptor, bytes.baseAddress, bytes.count, CInt(MSG_NOSIGNAL) | CInt(MSG_DONTWAIT))
}
