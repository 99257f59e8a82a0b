import Foundation
import NIOCore
import SharedStateWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A blocking socket to syncd for the benchmark's floors (``BenchFloorReader``,
/// ``BenchFloorWriter``): connected, the handshake done by hand, frames written and read with
/// write(2) and read(2).
enum BenchSocket {
    /// A blocking socket connected to syncd at `path`, after Hello and Welcome.
    static func connected(to path: String) throws -> CInt {
        #if canImport(Glibc) || canImport(Musl)
            let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw failure("socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            throw SharedStateError(.invalidArgument, "the socket path \(path) is longer than \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: path.utf8)
            bytes[path.utf8.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw failure("connecting to \(path)")
        }
        let hello = Sharedstate_V1_ClientFrame.with {
            $0.hello = .with {
                $0.protocolVersion = WireProtocol.version
                $0.clientName = "syncctl bench"
            }
        }
        try writeAll(Frame.encode(hello), to: descriptor)
        var frames = FrameDecoder(maxFrameBytes: WireProtocol.maxServerFrameBytes)
        var buffer = ByteBufferAllocator().buffer(capacity: 4_096)
        while true {
            // syncd sends nothing before the Welcome and nothing after it until the watch starts.
            if let frame = try frames.next() {
                guard case .welcome = try Frame.decode(Sharedstate_V1_ServerFrame.self, from: frame).kind else {
                    throw SharedStateError(.protocolViolation, "syncd at \(path) answered the hello with something other than a welcome")
                }
                return descriptor
            }
            try readSome(descriptor, into: &buffer)
            frames.receive(buffer)
        }
    }

    static func writeAll(_ frame: ByteBuffer, to descriptor: CInt) throws {
        var rest = frame
        while rest.readableBytes > 0 {
            let written = rest.withUnsafeReadableBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { throw failure("writing to syncd") }
            rest.moveReaderIndex(forwardBy: written)
        }
    }

    /// Replaces `buffer`'s contents with what one read(2) returns.
    static func readSome(_ descriptor: CInt, into buffer: inout ByteBuffer) throws {
        buffer.clear()
        var result = 0
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 1 << 16) { bytes in
            result = read(descriptor, bytes.baseAddress, bytes.count)
            return max(result, 0)
        }
        if result == 0 { throw SharedStateError(.unavailable, "syncd closed the connection before every write arrived") }
        if result < 0 { throw failure("reading from syncd") }
    }

    private static func failure(_ what: String) -> SharedStateError {
        SharedStateError(.unavailable, "\(what) failed: \(String(cString: strerror(errno)))")
    }
}
