import Foundation
import SharedStateWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Tells systemd how syncd is doing, through the datagram socket in `$NOTIFY_SOCKET` (sd_notify's
/// protocol, without linking libsystemd). Without that variable every call does nothing, so syncd
/// runs the same way outside systemd.
///
/// The socket may be a path or, with a leading `@`, a name in the abstract namespace. Sending
/// never blocks (see `send`).
final class SystemdNotifier: Sendable {
    private let address: UnixSocketAddress?

    /// A notifier for the socket named in `environment`, if any.
    init(environment: [String: String]) {
        address = environment["NOTIFY_SOCKET"].flatMap { UnixSocketAddress(path: $0) }
    }

    /// Whether syncd runs under a service manager that listens.
    var isEnabled: Bool { address != nil }

    /// syncd has opened its database and its socket accepts connections.
    func ready(status: String) { send("READY=1\nSTATUS=\(status)") }

    /// A one-line summary for `systemctl status`.
    func status(_ status: String) { send("STATUS=\(status)") }

    /// syncd is alive; sent at half of `WATCHDOG_USEC`.
    func watchdog() { send("WATCHDOG=1") }

    /// syncd began reloading its configuration; follow with ``ready(status:)``.
    func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        send("RELOADING=1\nMONOTONIC_USEC=\(microseconds)")
    }

    /// syncd began shutting down.
    func stopping() { send("STOPPING=1") }

    private func send(_ message: String) {
        guard let address else { return }
        #if canImport(Glibc) || canImport(Musl)
            let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
            let descriptor = socket(AF_UNIX, SOCK_DGRAM, 0)
        #endif
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        _ = message.utf8CString.withUnsafeBufferPointer { text in
            // Never blocks: the callers run on Swift's cooperative threads (2 on 2 cores), and a
            // manager that is slow to read its queue once froze every task of syncd in sendto,
            // SIGHUP handling included. A message the full queue refuses is dropped; a later
            // STATUS= or WATCHDOG=1 replaces it.
            address.withSocketAddress {
                sendto(descriptor, text.baseAddress, text.count - 1, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), $0, $1)
            }
        }
    }
}
