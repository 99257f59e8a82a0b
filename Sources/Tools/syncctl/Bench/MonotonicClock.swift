#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Nanoseconds of `CLOCK_MONOTONIC`: the same clock in every process of the machine, so a
/// timestamp written into a value can be compared with the time a watcher receives it.
enum MonotonicClock {
    static var nanoseconds: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
