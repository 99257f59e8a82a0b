import Foundation

/// A few threads that run closures in the order they are submitted, started as work comes (up
/// to a limit) and kept for the next.
final class BackgroundThreads: @unchecked Sendable {
    private let limit: Int
    private let prepare: @Sendable () -> Void
    /// Guards everything below, and wakes an idle thread.
    private let condition = NSCondition()
    private var queue: [@Sendable () -> Void] = []
    private var started = 0
    private var idle = 0

    /// - Parameter prepare: Run by each thread once, before its first work.
    init(limit: Int, prepare: @escaping @Sendable () -> Void) {
        self.limit = limit
        self.prepare = prepare
    }

    /// Queues `work` for the next free thread; starts one if none is idle and the limit allows.
    func submit(_ work: @escaping @Sendable () -> Void) {
        condition.lock()
        queue.append(work)
        if idle == 0 && started < limit {
            started += 1
            let thread = Thread { [self] in
                prepare()
                serve()
            }
            thread.name = "syncd-background"
            thread.start()
        } else {
            condition.signal()
        }
        condition.unlock()
    }

    private func serve() {
        while true {
            condition.lock()
            idle += 1
            while queue.isEmpty { condition.wait() }
            idle -= 1
            let work = queue.removeFirst()
            condition.unlock()
            work()
        }
    }
}
