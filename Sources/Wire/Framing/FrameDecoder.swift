import NIOCore

/// Splits a byte stream into frames: a 4-byte big-endian length, then that many bytes.
///
/// It only frames bytes; decoding the protobuf message inside is the next step's job. A length over
/// the limit is a protocol error: the stream cannot be resynchronised, so the connection must end.
public struct FrameDecoder: ByteToMessageDecoder, NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    /// The largest payload accepted, in bytes.
    public let maxFrameBytes: Int

    /// What ``receive(_:)`` took that ``next()`` has not cut into frames yet: at most the start of
    /// one frame, once `next()` returned nil.
    private var unread: ByteBuffer?

    /// Creates a decoder that refuses payloads over `maxFrameBytes`.
    public init(maxFrameBytes: Int) {
        self.maxFrameBytes = maxFrameBytes
    }

    /// Takes the bytes of one read from the stream, after any frame an earlier read left unfinished;
    /// ``next()`` then cuts them into frames. A handler that cuts frames itself uses these two
    /// rather than NIO's `ByteToMessageHandler`, which is generic over its decoder and costs a
    /// look-up of its type at run time per read and a pipeline hop per frame.
    public mutating func receive(_ bytes: ByteBuffer) {
        guard var partial = unread, partial.readableBytes > 0 else {
            unread = bytes
            return
        }
        unread = nil
        var bytes = bytes
        partial.writeBuffer(&bytes)
        unread = partial
    }

    /// The next whole frame's payload among the bytes received, or nil until more arrive.
    ///
    /// - Throws: ``SharedStateError`` with code `tooLarge` as soon as a frame's length is over the
    ///   limit, before its payload arrives. The stream cannot be followed after that.
    public mutating func next() throws(SharedStateError) -> ByteBuffer? {
        guard var bytes = unread else { return nil }
        unread = nil
        let frame = try decode(buffer: &bytes)
        if bytes.readableBytes > 0 { unread = bytes }
        return frame
    }

    public mutating func decode(buffer: inout ByteBuffer) throws(SharedStateError) -> ByteBuffer? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return nil }
        guard length <= maxFrameBytes else {
            throw SharedStateError(
                .tooLarge,
                "frame of \(length) bytes is over the limit of \(maxFrameBytes) bytes"
            )
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return nil }
        buffer.moveReaderIndex(forwardBy: 4)
        return buffer.readSlice(length: Int(length))
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> ByteBuffer? {
        try decode(buffer: &buffer)
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = try decode(buffer: &buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(frame))
        return .continue
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        try decode(context: context, buffer: &buffer)
    }
}
