import Logging
import Synchronization

/// What a ``RecordingLogHandler`` was given: each message with its metadata, as one line.
final class RecordedLog: Sendable {
    private let lines = Mutex<[String]>([])

    var messages: [String] { lines.withLock { $0 } }

    func record(_ event: LogEvent) {
        let metadata = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        lines.withLock { $0.append("\(event.message)\(metadata)") }
    }
}

/// A log handler that keeps what it is given instead of printing it: for tests that make syncd
/// log an error on purpose.
struct RecordingLogHandler: LogHandler {
    let log: RecordedLog
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) { log.record(event) }
}
