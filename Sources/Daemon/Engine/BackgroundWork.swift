import Foundation
import SharedStateWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Work that may run long — reading a large range of entries, checking a backup, the file I/O of
/// a transfer — on threads of its own, at a lower scheduling priority.
///
/// On two cores, a thread encoding a million entries competes with the event loops and the
/// writer, which serve every other client; at nice 10 the kernel gives them the core as soon as
/// they wake, so a heavy request slows down instead of holding up everyone else's writes.
package enum BackgroundWork {
    /// How much nicer than syncd itself a thread is while it runs background work.
    static let niceness: Int32 = 10

    /// The nice value of background threads: syncd's own (its main thread's, which a unit's
    /// `Nice=` sets) plus ``niceness``, at most 19.
    private static let backgroundNice: Int32 = {
        #if os(Linux)
            errno = 0
            let own = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getpid()))
            return min(19, (errno == 0 ? own : 0) + niceness)
        #else
            return niceness
        #endif
    }()

    /// The threads, one per processor (at least two), started as work comes (D46).
    private static let threads = BackgroundThreads(limit: max(2, ProcessInfo.processInfo.activeProcessorCount)) {
        lowerTheCurrentThread()
    }

    /// Runs `work` on a background thread at ``niceness``.
    ///
    /// - Throws: What `work` throws.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws(SharedStateError) -> T) async throws(SharedStateError) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, SharedStateError>, Never>) in
            threads.submit {
                continuation.resume(returning: Result { () throws(SharedStateError) in try work() })
            }
        }
        return try result.get()
    }

    /// Sets the calling thread's nice value: on Linux a nice value belongs to a thread, and
    /// `setpriority` for "process" 0 sets the caller's. The threads run nothing else of syncd's,
    /// so it is never raised back; a failure only leaves the thread at its priority.
    private static func lowerTheCurrentThread() {
        #if os(Linux)
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, backgroundNice)
        #endif
    }
}
