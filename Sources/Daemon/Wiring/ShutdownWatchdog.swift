import Foundation
import Logging

/// Says where syncd waits when it has stopped serving but has not finished: once armed, if it is
/// not disarmed within `delay`, it logs the step of the shutdown syncd is in and every thread of
/// the process with its kernel state and what it waits on; with `exitsAfter`, it then ends the
/// process with status 1.
///
/// A thread of its own, not a task: it must run while whatever holds the event loops or the
/// cooperative thread pool holds them.
///
/// ```swift
/// let watchdog = ShutdownWatchdog(logger: logger)
/// defer { watchdog.disarm() }
/// try await group.run()
/// watchdog.arm(step: "closing the database")
/// ```
public final class ShutdownWatchdog: @unchecked Sendable {
    // @unchecked: `state` is only touched with `condition` locked.
    private enum State {
        case idle
        case armed(step: String)
        case disarmed
    }

    private let delay: Duration
    private let exitsAfter: Duration?
    private let logger: Logger
    private let condition = NSCondition()
    private var state = State.idle

    /// Creates an idle watchdog; nothing runs until ``arm(step:)``.
    ///
    /// - Parameters:
    ///   - delay: How long the shutdown may take before the threads are logged.
    ///   - exitsAfter: How long after that the process is ended with status 1; nil never ends it
    ///     (a daemon running inside a test process, say).
    public init(delay: Duration = .seconds(5), exitsAfter: Duration? = nil, logger: Logger) {
        self.delay = delay
        self.exitsAfter = exitsAfter
        self.logger = logger
    }

    /// Starts the countdown, or names the step the shutdown has reached when it runs already.
    public func arm(step: String) {
        let isFirst = withState { state in
            guard case .idle = state else {
                if case .armed = state { state = .armed(step: step) }
                return false
            }
            state = .armed(step: step)
            return true
        }
        guard isFirst else { return }
        let thread = Thread { [self] in watch() }
        thread.name = "syncd-shutdown"
        thread.start()
    }

    /// Stops the countdown: the shutdown finished.
    public func disarm() {
        withState { $0 = .disarmed }
        condition.broadcast()
    }

    private func withState<T>(_ body: (inout State) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&state)
    }

    private func watch() {
        guard let step = waitWhileArmed(for: delay) else { return }
        logger.error(
            "syncd has stopped serving but has not finished shutting down",
            metadata: ["waited": "\(delay)", "step": "\(step)", "threads": "\(Self.threads().joined(separator: "; "))"]
        )
        guard let exitsAfter, let step = waitWhileArmed(for: exitsAfter) else { return }
        logger.critical("syncd ends itself: its shutdown does not finish", metadata: ["step": "\(step)"])
        _exit(1)
    }

    /// Waits up to `duration`; the step still running then, or nil once disarmed.
    private func waitWhileArmed(for duration: Duration) -> String? {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while case .armed = state {
            if !condition.wait(until: deadline) { break }
        }
        if case .armed(let step) = state { return step }
        return nil
    }

    /// Each thread of this process, the main thread first, then the others by id: its name, its
    /// state, and the kernel function it waits in.
    static func threads() -> [String] {
        func read(_ path: String) -> String {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        // Not by id alone: ids wrap around, so a thread started later may have a smaller one.
        let main = Int(getpid())
        let order = tasks.sorted { (Int($0) == main ? -1 : Int($0) ?? 0) < (Int($1) == main ? -1 : Int($1) ?? 0) }
        return order.map { task in
            let directory = "/proc/self/task/\(task)"
            let stat = read(directory + "/stat")
            // The state follows the name, which is in parentheses and may hold spaces.
            let state = stat.lastIndex(of: ")").map { stat[stat.index($0, offsetBy: 2)...].prefix(1) } ?? "?"
            return "\(task) \(read(directory + "/comm")) \(state) \(read(directory + "/wchan"))"
        }
    }
}
