#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The CPU time this process has spent so far, user and system, over every thread: what a bench
/// reports as the client's own cost per operation, beside syncd's from `/proc`.
enum ProcessCPUTime {
    static var microseconds: UInt64 {
        var usage = rusage()
        #if canImport(Glibc)
            getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        let seconds = UInt64(usage.ru_utime.tv_sec) + UInt64(usage.ru_stime.tv_sec)
        return seconds * 1_000_000 + UInt64(usage.ru_utime.tv_usec) + UInt64(usage.ru_stime.tv_usec)
    }
}
