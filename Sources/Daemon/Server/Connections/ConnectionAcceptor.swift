import Foundation
import Logging
import SharedStateWire
import SyncEngine

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The listening Unix socket, and the thread that accepts its connections.
///
/// syncd accepts connections itself, rather than through NIO's server bootstrap, so that it
/// knows each connected socket's descriptor: a ``ConnectionWriter`` writes to that socket
/// directly while nothing of its connection waits in NIO, and NIO serves the connection otherwise
/// (``SocketServer`` hands it each socket with `ClientBootstrap.withConnectedSocket`).
///
/// The thread sleeps in `poll` on the listening socket and a pipe that ``stop()`` writes to,
/// so stopping neither closes nor shuts down a socket systemd passed in and keeps for the next
/// start.
final class ConnectionAcceptor: Sendable {
    /// How many connections the kernel holds that syncd has not accepted yet.
    static let backlog: Int32 = 1024

    private let listener: Int32
    /// Whether the listening socket is syncd's own, closed once accepting ends.
    private let closesListener: Bool
    /// The pipe ``stop()`` writes to, which wakes the accepting thread.
    private let wakeUp: (read: Int32, write: Int32)
    private let logger: Logger

    /// Binds a new socket at `path`, lets its owner and `group` connect (mode 0660; nil keeps
    /// syncd's group), and listens on it; ``run(serve:)`` closes it when it ends.
    /// - Throws: ``DaemonStartError`` naming the path when the socket cannot be made, bound or
    ///   given its mode and group.
    static func listening(at path: String, group: gid_t?, logger: Logger) throws(DaemonStartError) -> ConnectionAcceptor {
        guard let address = UnixSocketAddress(path: path, abstractNames: false) else {
            throw DaemonStartError("socket path \(path) is empty or longer than \(UnixSocketAddress.maxPathBytes) bytes")
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw DaemonStartError("cannot make a socket for \(path): \(Self.lastError)") }
        guard address.withSocketAddress({ bind(descriptor, $0, $1) }) == 0 else {
            let error = Self.lastError
            close(descriptor)
            throw DaemonStartError("cannot bind socket \(path): \(error)")
        }
        do throws(DaemonStartError) {
            // Before it listens: nobody else connects in between.
            if let group, chown(path, uid_t.max, group) != 0 {
                throw DaemonStartError("cannot give socket \(path) to group \(group): \(Self.lastError)")
            }
            if chmod(path, 0o660) != 0 {
                throw DaemonStartError("cannot set the mode of socket \(path): \(Self.lastError)")
            }
            guard listen(descriptor, Self.backlog) == 0 else {
                throw DaemonStartError("cannot listen on socket \(path): \(Self.lastError)")
            }
            return try ConnectionAcceptor(adopting: descriptor, closingIt: true, logger: logger)
        } catch {
            close(descriptor)
            unlink(path)
            throw error
        }
    }

    /// Accepts on `descriptor`, a socket already listening (socket activation, or made by
    /// ``listening(at:group:logger:)``).
    init(adopting descriptor: Int32, closingIt: Bool = false, logger: Logger) throws(DaemonStartError) {
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw DaemonStartError("cannot make fd \(descriptor) non-blocking: \(Self.lastError)")
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw DaemonStartError("cannot make a pipe: \(Self.lastError)") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.listener = descriptor
        self.closesListener = closingIt
        self.wakeUp = (read: ends[0], write: ends[1])
        self.logger = logger
    }

    deinit {
        close(wakeUp.read)
        close(wakeUp.write)
    }

    /// Accepts connections on a thread of its own, handing each connected socket (close-on-exec)
    /// to `serve`, until ``stop()``; returns once that thread has ended. A socket
    /// made by ``listening(at:group:logger:)`` is closed then.
    func run(serve: @escaping @Sendable (Int32) -> Void) async {
        await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                acceptUntilStopped(serve: serve)
                if closesListener { close(listener) }
                ended.resume()
            }
            thread.name = "syncd-accept"
            thread.start()
        }
    }

    /// Ends ``run(serve:)``'s thread; connections already accepted stay.
    func stop() {
        var byte: UInt8 = 1
        _ = write(wakeUp.write, &byte, 1)
    }

    private func acceptUntilStopped(serve: @Sendable (Int32) -> Void) {
        var watched = [
            pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeUp.read, events: Int16(POLLIN), revents: 0),
        ]
        var isOutOfDescriptors = false
        // At most once in ten seconds, not on every attempt: syncd's own files (a read of
        // /etc/passwd at admission) free and take a descriptor now and then, so accepting flaps.
        var lastReport: ContinuousClock.Instant?
        while true {
            if isOutOfDescriptors {
                // The connection that waits keeps the listening socket readable: wait on the stop
                // pipe alone for a tenth of a second, then try again, rather than spin.
                var stop = watched[1]
                if poll(&stop, 1, 100) > 0 { return }
            } else {
                if poll(&watched, nfds_t(watched.count), -1) < 0, errno != EINTR {
                    logger.critical("waiting for connections failed", metadata: ["error": "\(Self.lastError)"])
                    return
                }
                if watched[1].revents != 0 { return }
            }
            accepting: while true {
                // `accept4` is not in Swift's Glibc module; NIO makes the socket non-blocking.
                let connection = accept(listener, nil, nil)
                if connection >= 0 {
                    isOutOfDescriptors = false
                    _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                    serve(connection)
                    continue
                }
                let error = errno
                switch error {
                case EINTR, ECONNABORTED:
                    continue accepting
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    if lastReport.map({ $0.duration(to: .now) >= .seconds(10) }) ?? true {
                        logger.error("cannot accept a connection; retrying", metadata: ["error": "\(Self.describe(error))"])
                        lastReport = .now
                    }
                    isOutOfDescriptors = true
                default:
                    // EAGAIN: no connection waits.
                    isOutOfDescriptors = false
                }
                break accepting
            }
        }
    }

    private static func describe(_ error: Int32) -> String { String(cString: strerror(error)) }

    private static var lastError: String { describe(errno) }
}
