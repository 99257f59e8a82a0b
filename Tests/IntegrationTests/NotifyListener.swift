import Foundation
import SharedStateWire
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A `NOTIFY_SOCKET` owned by a test: receives what syncd tells its service manager.
///
/// Like systemd, it reads the socket all the time (on a thread of its own), so syncd never finds
/// the queue full: a datagram socket queues only a handful of messages unread.
final class NotifyListener: Sendable {
    let path: String
    private let descriptor: Int32
    private let received = Mutex<[(at: ContinuousClock.Instant, text: String)]>([])

    /// Every message received so far, oldest first.
    var messages: [(at: ContinuousClock.Instant, text: String)] { received.withLock { $0 } }

    /// Binds `path`, or with a leading `@` a name in the abstract namespace.
    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        // A leading `@` names an abstract socket, as systemd's NOTIFY_SOCKET may.
        let bound = UnixSocketAddress(path: path)?.withSocketAddress { bind(descriptor, $0, $1) } ?? -1
        guard bound == 0 else { throw TestFailure("cannot bind notify socket \(path)") }
        // Holds the listener only while it waits 20 ms, so the test's release still ends it.
        let reader = Thread { [weak self] in
            while let listener = self {
                var ready = pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)
                if poll(&ready, 1, 20) > 0 { listener.drain() }
            }
        }
        reader.start()
    }

    /// Reads every datagram that has arrived.
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count <= 0 { return }
            let text = String(decoding: buffer[0..<count], as: UTF8.self)
            received.withLock { $0.append((ContinuousClock.now, text)) }
        }
    }

    /// Waits until a message containing `text` arrives after the first `skipping` messages;
    /// returns its index.
    @discardableResult
    func waitFor(_ text: String, after skipping: Int = 0, timeout: Duration = .seconds(20)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while true {
            let messages = self.messages
            if let index = messages.indices.dropFirst(skipping).first(where: { messages[$0].text.contains(text) }) {
                return index
            }
            if ContinuousClock.now > deadline {
                throw TestFailure("no \(text) within \(timeout); received \(messages.map(\.text))")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    deinit {
        close(descriptor)
        if !path.hasPrefix("@") { unlink(path) }
    }
}
