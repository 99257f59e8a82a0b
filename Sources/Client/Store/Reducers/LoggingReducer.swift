import CustomDump
import Foundation
import Logging

extension Reducer {
    /// Logs every action at debug level, and the state change it made at trace level, through
    /// `logger`.
    public func logActions(to logger: Logger) -> LoggingReducer<Self> {
        LoggingReducer(base: _reduceFunction, logger: logger)
    }
}

/// A reducer that logs its actions; see ``Reducer/logActions(to:)``.
public struct LoggingReducer<Base: Reducer>: Reducer {
    let base: (inout Base.State, Base.Action) -> Effect<Base.Action>
    let logger: Logger
    /// The longest action line logged; a longer one is cut.
    static var maxLineLength: Int { 2_000 }

    /// Logs the action, then runs the base reducer.
    public func reduce(into state: inout Base.State, action: Base.Action) -> Effect<Base.Action> {
        guard logger.logLevel <= .debug else { return base(&state, action) }
        var description = ""
        customDump(action, to: &description)
        // One line per action, as the journal expects, and not without end.
        var line = description.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        if line.count > Self.maxLineLength { line = String(line.prefix(Self.maxLineLength)) + " …" }
        logger.debug("action \(line)")
        guard logger.logLevel <= .trace else { return base(&state, action) }
        let before = state
        let effect = base(&state, action)
        if let difference = diff(before, state) {
            logger.trace("state changed:\n\(difference)")
        }
        return effect
    }
}
