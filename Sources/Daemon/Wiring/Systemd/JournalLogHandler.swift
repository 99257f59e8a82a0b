import Foundation
import Logging
import SyncServer

/// Writes syncd's log to standard error, one line per message, in the form journald reads when
/// syncd runs under systemd (a `<N>` syslog priority prefix, no timestamp: the journal adds one),
/// or with a timestamp when run by hand. Never colours. The level comes from ``RuntimeSettings``,
/// so SIGHUP can change it.
public struct JournalLogHandler: LogHandler {
    private let label: String
    private let settings: RuntimeSettings
    private let isJournal: Bool
    public var metadata: Logger.Metadata = [:]

    /// A handler for `label`; `isJournal` selects the journald form.
    public init(label: String, settings: RuntimeSettings, isJournal: Bool) {
        self.label = label
        self.settings = settings
        self.isJournal = isJournal
    }

    /// Whether standard error is connected to the journal (systemd sets `JOURNAL_STREAM`).
    public static func isStandardErrorJournal(environment: [String: String]) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        var status = stat()
        guard fstat(2, &status) == 0 else { return false }
        return stream == "\(status.st_dev):\(status.st_ino)"
    }

    public var logLevel: Logger.Level {
        get { settings.logLevel }
        set { settings.logLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let rendered = fields.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        let message = "\(event.message)\(rendered)".replacingOccurrences(of: "\n", with: " ")
        let line: String
        if isJournal {
            line = "<\(Self.priority(event.level))>\(message)\n"
        } else {
            line = "\(Date.now.ISO8601Format()) \(event.level) \(label): \(message)\n"
        }
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// The syslog priority journald files a level under.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
