import Foundation
import Logging
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

@Suite struct ShutdownWatchdogTests {
    @Test func aShutdownThatDoesNotFinishIsLoggedWithItsStepAndThreads() async throws {
        let log = RecordedLog()
        let watchdog = ShutdownWatchdog(delay: .milliseconds(50), logger: Logger(label: "test") { _ in RecordingLogHandler(log: log) })
        watchdog.arm(step: "closing the database")
        watchdog.arm(step: "releasing the instance lock")
        let deadline = ContinuousClock.now + .seconds(10)
        while log.messages.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        watchdog.disarm()
        let message = try #require(log.messages.first)
        #expect(message.hasPrefix("syncd has stopped serving but has not finished shutting down"))
        #expect(message.contains("step=releasing the instance lock"))
        // Every thread, from the main thread (whose id is the process's) on.
        #expect(message.contains("threads=\(getpid()) "))
    }

    @Test func aShutdownThatFinishesInTimeLogsNothing() async throws {
        let log = RecordedLog()
        let watchdog = ShutdownWatchdog(delay: .milliseconds(200), logger: Logger(label: "test") { _ in RecordingLogHandler(log: log) })
        watchdog.arm(step: "closing the database")
        watchdog.disarm()
        try await Task.sleep(for: .milliseconds(400))
        #expect(log.messages.isEmpty)
        // Armed again after it was disarmed, it stays quiet.
        watchdog.arm(step: "exiting")
        try await Task.sleep(for: .milliseconds(400))
        #expect(log.messages.isEmpty)
    }

    @Test func eachThreadIsListedWithItsNameStateAndWaitChannel() throws {
        let threads = ShutdownWatchdog.threads()
        let main = try #require(threads.first)
        #expect(main.hasPrefix("\(getpid()) "))
        // The id, the name (without spaces here), a one-letter state, the wait channel.
        for thread in threads {
            let fields = thread.split(separator: " ")
            #expect(fields.count >= 3, "\(thread)")
        }
    }
}
