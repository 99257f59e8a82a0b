import ArgumentParser
import Foundation
import SyncClient

/// Turns errors into syncctl's message on standard error and its documented exit code.
enum CommandFailure {
    /// The exit code for an error from syncd or the client library.
    static func exitCode(for error: SharedStateError) -> Int32 {
        switch error.code {
        case .notFound: 2
        case .conflict: 3
        case .unavailable: 4
        case .permissionDenied: 5
        case .schemaViolation: 6
        default: 1
        }
    }

    /// Runs `body`; on a ``SharedStateError`` prints `syncctl: <message>` and exits with its code.
    static func exitOnError<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as SharedStateError {
            // The message names the first violation; a refused schema's others follow, one a line.
            let others = error.violations.dropFirst().map { "\n  \($0)" }.joined()
            fail(error.message + others, code: exitCode(for: error))
        }
    }

    /// Prints `syncctl: <message>` to standard error and exits.
    static func fail(_ message: String, code: Int32) -> Never {
        FileHandle.standardError.write(Data("syncctl: \(message)\n".utf8))
        Foundation.exit(code)
    }
}
