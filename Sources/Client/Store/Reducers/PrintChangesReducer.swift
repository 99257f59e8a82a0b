import CustomDump
import Foundation
import Logging
import Synchronization

extension Reducer {
    /// Prints each action this reducer receives and the change it made to the state, as a
    /// custom-dump diff (− before, + after), for debugging.
    ///
    /// ```
    /// received action:
    ///   Counter.Action.increment
    ///   Counter.State(
    /// -   count: 0
    /// +   count: 1
    ///   )
    /// ```
    ///
    /// - Parameter output: Where the text goes: standard error (the default), a `Logger`, or
    ///   any function.
    public func _printChanges(to output: ChangeOutput = .standardError) -> PrintChangesReducer<Self> {
        PrintChangesReducer(base: _reduceFunction, output: output)
    }
}

/// Where `Reducer/_printChanges(to:)` writes.
public struct ChangeOutput: Sendable {
    let write: @Sendable (String) -> Void

    /// Writes each action's text with `write`.
    public init(_ write: @escaping @Sendable (String) -> Void) {
        self.write = write
    }

    /// Standard error, each action's text written whole.
    public static var standardError: Self {
        Self { text in
            standardErrorLock.withLock { _ in FileHandle.standardError.write(Data((text + "\n").utf8)) }
        }
    }

    /// One log message per action, at `level`.
    public static func logger(_ logger: Logger, level: Logger.Level = .debug) -> Self {
        Self { text in logger.log(level: level, "\(text)") }
    }
}

private let standardErrorLock = Mutex(())

/// A reducer that prints its actions and state changes; see `Reducer/_printChanges(to:)`.
public struct PrintChangesReducer<Base: Reducer>: Reducer {
    let base: (inout Base.State, Base.Action) -> Effect<Base.Action>
    let output: ChangeOutput

    /// Runs the base reducer, then prints the action and how the state changed.
    public func reduce(into state: inout Base.State, action: Base.Action) -> Effect<Base.Action> {
        let before = state
        let effect = base(&state, action)
        var text = "received action:\n"
        customDump(action, to: &text, indent: 2)
        text += "\n"
        if let difference = diff(before, state) {
            text += difference
        } else {
            text += "  (No state changes)"
        }
        output.write(text)
        return effect
    }
}
