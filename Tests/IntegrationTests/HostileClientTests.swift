import Foundation
import SharedStateWire
import SyncClient
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A bare Unix socket for sending bytes no well-behaved client would.
///
/// Its reads block, so each runs on a thread of its own (``onOwnThread(_:)``).
final class RawConnection: Sendable {
    private let descriptor: Int32

    init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let connected = UnixSocketAddress(path: path, abstractNames: false)?.withSocketAddress { connect(descriptor, $0, $1) } ?? -1
        guard connected == 0 else { throw TestFailure("cannot connect to \(path)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ bytes: [UInt8]) {
        // MSG_NOSIGNAL: a connection syncd closed fails the write instead of killing the tests.
        _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func sendFrame(_ payload: [UInt8]) {
        let length = UInt32(payload.count).bigEndian
        send(withUnsafeBytes(of: length) { Array($0) } + payload)
    }

    /// Writes as much of `bytes` as the socket takes without blocking; -1 when it takes nothing now.
    func sendWithoutBlocking(_ bytes: UnsafeRawBufferPointer) -> Int {
        Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
    }

    /// Sends a Hello, as a client starts.
    func sendHello(name: String = "raw") {
        let hello =
            try! Sharedstate_V1_ClientFrame.with {
                $0.hello = .with {
                    $0.protocolVersion = WireProtocol.version
                    $0.clientName = name
                }
            }.serializedBytes() as [UInt8]
        sendFrame(hello)
    }

    /// Sends a Hello and waits for the answer: true for a Welcome.
    func greet(name: String = "raw") async throws -> Bool {
        sendHello(name: name)
        let answer = await receive()
        guard answer.count > 4 else { return false }
        let frame = try Sharedstate_V1_ServerFrame(serializedBytes: Array(answer[4...]))
        if case .welcome = frame.kind { return true }
        return false
    }

    /// Everything the daemon sends until it closes the connection (or 10 s pass).
    func readUntilClosed() async -> [UInt8] {
        var received: [UInt8] = []
        while true {
            let chunk = await receive()
            if chunk.isEmpty { return received }
            received += chunk
        }
    }

    /// What one read returns; empty once the connection is closed or 10 s passed without data.
    func receive() async -> [UInt8] {
        await onOwnThread { [descriptor] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            return count > 0 ? Array(buffer[0..<count]) : []
        }
    }

    /// The `fatal` error in what the daemon sent, if any.
    static func fatalError(in bytes: [UInt8]) throws -> Sharedstate_V1_Error? {
        var offset = 0
        while offset + 4 <= bytes.count {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let frame = try Sharedstate_V1_ServerFrame(serializedBytes: Array(bytes[offset + 4..<offset + 4 + length]))
            if case .fatal(let error) = frame.kind { return error }
            offset += 4 + length
        }
        return nil
    }

    deinit { close(descriptor) }
}

@Suite(.timeLimit(.minutes(2))) struct HostileClientTests {
    private static let hello: [UInt8] = try! Sharedstate_V1_ClientFrame.with {
        $0.hello = .with {
            $0.protocolVersion = 1
            $0.clientName = "hostile"
        }
    }.serializedBytes()

    @Test(arguments: [
        ("garbage instead of a frame payload", [UInt8](repeating: 0xFF, count: 12), true, Sharedstate_V1_ErrorCode.protocol),
        (
            "a request before Hello", try! Sharedstate_V1_ClientFrame.with { $0.request = .with { $0.id = 1 } }.serializedBytes(), true,
            .protocol
        ),
        (
            "an unsupported protocol version", try! Sharedstate_V1_ClientFrame.with { $0.hello.protocolVersion = 99 }.serializedBytes(),
            true, .protocol
        ),
    ])
    func badFramesEndOnlyThatConnection(_ what: String, _ payload: [UInt8], _ framed: Bool, _ code: Sharedstate_V1_ErrorCode) async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let bystander = try await SharedStateClient.connect(.init(socketPath: scratch.socket, clientName: "bystander"))
        try await bystander.put("before", json: "1")

        let hostile = try RawConnection(path: scratch.socket)
        hostile.sendFrame(payload)
        let fatal = try RawConnection.fatalError(in: await hostile.readUntilClosed())
        #expect(fatal?.code == code, "\(what)")

        try await bystander.put("after", json: "2")
        #expect(try await bystander.list().entries.map(\.key) == ["after", "before"])
        try await daemon.stop()
    }

    @Test func anOversizedFrameIsRefusedBeforeItIsRead() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let hostile = try RawConnection(path: scratch.socket)
        hostile.sendFrame(Self.hello)
        hostile.send([0xFF, 0xFF, 0xFF, 0xF0])
        let fatal = try RawConnection.fatalError(in: await hostile.readUntilClosed())
        #expect(fatal?.code == .tooLarge)
        #expect(fatal?.message.contains("over the limit") == true)
        #expect(try await syncctl(["put", "alive", "true"], scratch: scratch).status == 0)
        try await daemon.stop()
    }

    @Test func invalidValuesAreRefusedByTheDaemonItself() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let hostile = try RawConnection(path: scratch.socket)
        hostile.sendFrame(Self.hello)
        let put =
            try Sharedstate_V1_ClientFrame.with {
                $0.request = .with {
                    $0.id = 5
                    $0.put = .with {
                        $0.key = "a"
                        $0.value = Data("{\"unterminated".utf8)
                    }
                }
            }.serializedBytes() as [UInt8]
        hostile.sendFrame(put)
        try await Task.sleep(for: .milliseconds(200))
        let status = try await syncctl(["--json", "status"], scratch: scratch)
        #expect(status.stdout.contains(#""revision":0,"#))
        #expect(try await syncctl(["get", "a"], scratch: scratch).status == 2)
        try await daemon.stop()
    }
}
