import Dependencies
import Foundation

/// The lines typed on standard input, as a stream: `readLine()` blocks, so a thread of its own
/// reads them. Tests give their own lines.
public struct CommandLines: Sendable {
    public var lines: @Sendable () -> AsyncStream<String>

    public init(lines: @escaping @Sendable () -> AsyncStream<String>) {
        self.lines = lines
    }

    public func callAsFunction() -> AsyncStream<String> { lines() }
}

extension CommandLines: DependencyKey {
    public static let liveValue = CommandLines {
        AsyncStream { continuation in
            Thread {
                while let line = readLine() { continuation.yield(line.trimmingCharacters(in: .whitespaces)) }
                continuation.finish()
            }.start()
        }
    }

    public static let testValue = CommandLines { AsyncStream { $0.finish() } }
}

extension DependencyValues {
    public var commandLines: CommandLines {
        get { self[CommandLines.self] }
        set { self[CommandLines.self] = newValue }
    }
}
