import NIOCore

/// Splits a byte stream into frames: a 4-byte big-endian length, then that many bytes.
///
/// It only frames bytes; decoding the protobuf message inside is the next step's job. A length over
/// the limit is a protocol error: the stream cannot be resynchronised, so the connection must end.
public struct FrameDecoder: ByteToMessageDecoder, NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    /// The largest payload accepted, in bytes.
    public let maxFrameBytes: Int

    /// Creates a decoder that refuses payloads over `maxFrameBytes`.
    public init(maxFrameBytes: Int) {
        self.maxFrameBytes = maxFrameBytes
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
