import ArgumentParser
import Foundation
import SharedState

#if canImport(Glibc)
    import Glibc
#endif

/// What a sleep on the main actor costs under `MainEventLoop`: `ContinuousClock` (the global
/// executor's timers) against `MainEventLoop.clock` (the main loop's own), in context switches
/// and CPU per sleep, alternated in one run; and whether each of the loop clock's sleeps resumed
/// on the main thread, never before its deadline, and whether a cancelled one ended at once.
struct SleepBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sleep",
        abstract: "Cost per main-actor sleep of ContinuousClock against MainEventLoop.clock."
    )

    @Option(help: "Sleeps per measurement.")
    var count = 2_000

    @Option(help: "How long each sleep is, in microseconds.")
    var micros = 500

    @Option(help: "Measurements of each, alternated.")
    var rounds = 3

    @Flag(help: "Print the figures and checks as one JSON object only.")
    var json = false

    func validate() throws {
        guard count >= 10 else { throw ValidationError("--count \(count): sleep at least 10 times per measurement") }
        guard micros >= 1 else { throw ValidationError("--micros \(micros): sleep at least a microsecond") }
        guard rounds >= 1 else { throw ValidationError("--rounds \(rounds): measure at least once") }
    }

    /// One measurement: context switches and CPU per sleep, and the loop clock's checks.
    struct Figures {
        var switchesPerSleep: Double
        var cpuMicrosPerSleep: Double
        var offMainThread = 0
        var early = 0
    }

    @MainActor
    func run() async throws {
        let duration = Duration.microseconds(micros)
        var continuous: [Figures] = []
        var loop: [Figures] = []
        for _ in 0..<rounds {
            continuous.append(
                try await Self.measure(count: count, duration: duration) { try await ContinuousClock().sleep(until: $0, tolerance: nil) })
            loop.append(try await Self.measure(count: count, duration: duration) { try await MainEventLoop.clock.sleep(until: $0) })
        }
        let cancelledPromptly = try await Self.cancellationEndsTheSleep()
        func best(_ figures: [Figures], _ value: (Figures) -> Double) -> Double { figures.map(value).min() ?? 0 }
        let offMainThread = loop.reduce(0) { $0 + $1.offMainThread }
        let early = loop.reduce(0) { $0 + $1.early }
        if json {
            print(
                #"{"continuous_switches":\#(best(continuous, \.switchesPerSleep)),"continuous_cpu_us":\#(best(continuous, \.cpuMicrosPerSleep)),"#
                    + #""loop_switches":\#(best(loop, \.switchesPerSleep)),"loop_cpu_us":\#(best(loop, \.cpuMicrosPerSleep)),"#
                    + #""loop_sleeps":\#(count * rounds),"loop_off_main_thread":\#(offMainThread),"loop_early":\#(early),"#
                    + #""cancelled_promptly":\#(cancelledPromptly)}"#
            )
        } else {
            print(
                "a main-actor sleep of \(micros) µs, best of \(rounds) × \(count): "
                    + "ContinuousClock \(String(format: "%.1f", best(continuous, \.switchesPerSleep))) context switches and "
                    + "\(String(format: "%.1f", best(continuous, \.cpuMicrosPerSleep))) µs of CPU; MainEventLoop.clock "
                    + "\(String(format: "%.1f", best(loop, \.switchesPerSleep))) and \(String(format: "%.1f", best(loop, \.cpuMicrosPerSleep))) µs; "
                    + "\(offMainThread) of the loop clock's sleeps resumed off the main thread, \(early) before their deadline; "
                    + "a cancelled sleep \(cancelledPromptly ? "ended at once" : "did not end at once")"
            )
        }
    }

    /// Sleeps `count` times with `sleep` (until the deadline it is given) from the main actor,
    /// counting the process's context switches and CPU time (`getrusage`), and each wake-up off
    /// the main thread or before its deadline.
    @MainActor
    static func measure(
        count: Int, duration: Duration, _ sleep: @MainActor (ContinuousClock.Instant) async throws -> Void
    ) async throws -> Figures {
        let before = usage()
        var figures = Figures(switchesPerSleep: 0, cpuMicrosPerSleep: 0)
        for _ in 0..<count {
            let deadline = ContinuousClock.now.advanced(by: duration)
            try await sleep(deadline)
            if !Thread.isMainThread { figures.offMainThread += 1 }
            if ContinuousClock.now < deadline { figures.early += 1 }
        }
        let after = usage()
        figures.switchesPerSleep = Double(after.switches - before.switches) / Double(count)
        figures.cpuMicrosPerSleep = (after.cpuSeconds - before.cpuSeconds) * 1e6 / Double(count)
        return figures
    }

    /// Whether a loop-clock sleep of ten seconds, cancelled after 20 ms, throws
    /// `CancellationError` within a second.
    @MainActor
    static func cancellationEndsTheSleep() async throws -> Bool {
        let start = ContinuousClock.now
        let sleeper = Task { @MainActor in
            try await MainEventLoop.clock.sleep(until: .now.advanced(by: .seconds(10)))
        }
        try await MainEventLoop.clock.sleep(until: .now.advanced(by: .milliseconds(20)))
        sleeper.cancel()
        let result = await sleeper.result
        guard case .failure(let error) = result, error is CancellationError else { return false }
        return ContinuousClock.now - start < .seconds(1)
    }

    private static func usage() -> (switches: Int, cpuSeconds: Double) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let seconds = { (time: timeval) in Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return (usage.ru_nvcsw + usage.ru_nivcsw, seconds(usage.ru_utime) + seconds(usage.ru_stime))
    }
}
