import NIOCore

/// What a connection sends a piece at a time: the frames, in order, not yet handed to its
/// channel, and whether the last piece handed over is still on its way to the socket.
struct PacedOutput {
    private var queue = CircularBuffer<(frame: ByteBuffer, promise: EventLoopPromise<Void>?)>()
    /// The bytes not yet handed to the channel.
    private(set) var bytes = 0
    /// Whether the last piece handed to the channel is not yet in the socket.
    var hasPieceInFlight = false

    var isEmpty: Bool { queue.isEmpty }

    mutating func append(_ frame: ByteBuffer, promise: EventLoopPromise<Void>?) {
        queue.append((frame, promise))
        bytes += frame.readableBytes
    }

    /// Up to `size` bytes from the front: whole frames, then a slice of the one that does not
    /// fit; a frame's promise goes with its last byte.
    mutating func takePiece(of size: Int) -> [(ByteBuffer, EventLoopPromise<Void>?)] {
        var piece: [(ByteBuffer, EventLoopPromise<Void>?)] = []
        var room = size
        while room > 0, let (first, promise) = queue.first {
            var frame = first
            if frame.readableBytes <= room {
                queue.removeFirst()
                piece.append((frame, promise))
                room -= frame.readableBytes
            } else {
                piece.append((frame.readSlice(length: room)!, nil))
                queue[queue.startIndex] = (frame, promise)
                room = 0
            }
        }
        bytes -= size - room
        hasPieceInFlight = !piece.isEmpty
        return piece
    }

    /// Empties it once the connection cannot be written any more: the promises to fail.
    mutating func drop() -> [EventLoopPromise<Void>] {
        let promises = queue.compactMap(\.promise)
        self = PacedOutput()
        return promises
    }
}
