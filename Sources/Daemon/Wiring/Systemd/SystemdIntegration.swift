import Logging
import ServiceLifecycle
import SyncEngine
import SyncSQLite
import Synchronization
import UnixSignals

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// syncd's conversation with its service manager: keeps `STATUS=` current, sends `WATCHDOG=1` while
/// the engine is healthy, reloads on SIGHUP (`RELOADING=1`, then `READY=1`) and announces
/// `STOPPING=1` first on shutdown. `READY=1` itself is sent by the daemon once the socket listens.
///
/// Listed last in the service group, so it is the first to hear of a shutdown.
final class SystemdIntegration: Service {
    private let notifier: SystemdNotifier
    private let engine: StateEngine
    private let watchdogInterval: Duration?
    private let status: @Sendable () -> String
    private let reload: @Sendable () -> Void
    private let logger: Logger

    /// - Parameters:
    ///   - watchdogInterval: How often to ping (half of `WATCHDOG_USEC`), or nil without a watchdog.
    ///   - status: The one-line summary for `STATUS=`.
    ///   - reload: Re-reads the configuration; called on SIGHUP.
    init(
        notifier: SystemdNotifier,
        engine: StateEngine,
        watchdogInterval: Duration?,
        logger: Logger,
        status: @escaping @Sendable () -> String,
        reload: @escaping @Sendable () -> Void
    ) {
        self.notifier = notifier
        self.engine = engine
        self.watchdogInterval = watchdogInterval
        self.logger = logger
        self.status = status
        self.reload = reload
    }

    /// Half of `WATCHDOG_USEC`, when the watchdog is meant for this process.
    static func watchdogInterval(environment: [String: String]) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != getpid() { return nil }
        return .microseconds(microseconds / 2)
    }

    func run() async throws {
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown {
                await withDiscardingTaskGroup { group in
                    group.addTask { await self.reloadOnHangup() }
                    if self.notifier.isEnabled {
                        group.addTask { await self.reportHealth() }
                    }
                }
            }
        } onGracefulShutdown: {
            self.notifier.stopping()
        }
    }

    private func reloadOnHangup() async {
        for await _ in await UnixSignalsSequence(trapping: .sighup) {
            notifier.reloading()
            reload()
            notifier.ready(status: status())
        }
    }

    /// Pings the watchdog while the engine's writer keeps answering probes, and refreshes
    /// `STATUS=`. A probe is an empty write through the writer queue: if the writer or the
    /// database is stuck, the probe never completes, the pings stop, and systemd restarts syncd.
    private func reportHealth() async {
        let interval = watchdogInterval ?? .seconds(5)
        let probe = ProbeState()
        while !Task.isCancelled {
            if watchdogInterval != nil {
                switch probe.check() {
                case .answered:
                    notifier.watchdog()
                    probe.start()
                    engine.submit(.probe) { _ in probe.finish() }
                case .pending:
                    logger.warning("the engine has not answered a health probe; withholding the watchdog ping")
                }
            }
            notifier.status(status())
            try? await Task.sleep(for: interval)
        }
    }
}

/// Whether the last health probe came back.
private final class ProbeState: Sendable {
    enum Check { case answered, pending }
    private let isPending = Atomic<Bool>(false)

    func check() -> Check { isPending.load(ordering: .acquiring) ? .pending : .answered }
    func start() { isPending.store(true, ordering: .releasing) }
    func finish() { isPending.store(false, ordering: .releasing) }
}
