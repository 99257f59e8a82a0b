/// The checks on a request's shape that syncd and the in-memory shared state both make, with
/// their errors, so the two give the same answer to the same request.
package enum RequestRules {
    /// The error for a key that does not exist.
    package static func notFound(_ key: String) -> SharedStateError {
        SharedStateError(.notFound, "key \(KeyRules.quoted(key)) not found")
    }

    /// The most bytes a write's cause may have.
    package static let maxCauseBytes = 256

    /// A write's cause is at most ``maxCauseBytes`` bytes of UTF-8 without control characters.
    package static func validateCause(_ cause: String) throws(SharedStateError) {
        if cause.utf8.count > maxCauseBytes {
            throw SharedStateError(.tooLarge, "the cause has \(cause.utf8.count) bytes; the limit is \(maxCauseBytes)")
        }
        // Unicode's control characters (category Cc) are exactly U+0000–U+001F and U+007F–U+009F,
        // a set its stability policy fixes: compared by value, not looked up per scalar.
        if cause.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            throw SharedStateError(.invalidArgument, "the cause contains a control character")
        }
    }

    /// A list's limit is absent or at least 1.
    package static func validateListLimit(_ limit: Int?) throws(SharedStateError) {
        if let limit, limit < 1 {
            throw SharedStateError(.invalidArgument, "list limit must be at least 1, not \(limit)")
        }
    }

    /// A transaction has at most `maxTransactionOperations` compares and operations together.
    package static func validateTransactionSize(_ size: Int, limits: Limits) throws(SharedStateError) {
        if size > limits.maxTransactionOperations {
            throw SharedStateError(
                .tooLarge,
                "transaction has \(size) compares and operations; the limit is \(limits.maxTransactionOperations)"
            )
        }
    }

    /// A watch names at most `maxWatchPrefixes` prefixes.
    /// The keys of an `exists`: at most as many as a transaction may hold operations, each a
    /// valid key.
    package static func validateExistsKeys(_ keys: [String], limits: Limits) throws(SharedStateError) {
        guard keys.count <= limits.maxTransactionOperations else {
            throw SharedStateError(.tooLarge, "exists names \(keys.count) keys; the limit is \(limits.maxTransactionOperations)")
        }
        for key in keys { try KeyRules.validateKey(key, limits: limits) }
    }

    package static func validateWatchPrefixCount(_ count: Int, limits: Limits) throws(SharedStateError) {
        if count > limits.maxWatchPrefixes {
            throw SharedStateError(.tooLarge, "watch names \(count) prefixes; the limit is \(limits.maxWatchPrefixes)")
        }
    }

    /// The error for resuming a watch after a revision the state has not reached: the client saw
    /// commits this database does not have (a restore, or a power loss at durability normal).
    package static func revisionAhead(_ revision: UInt64, current: UInt64) -> SharedStateError {
        SharedStateError(.futureRevision, "revision \(revision) is ahead of syncd's current revision \(current)")
    }
}

/// The rule for values, shared by syncd and the client: one JSON document within the size and
/// nesting limits.
public enum ValueRules {
    /// Checks that `value` is one JSON document within `limits`.
    ///
    /// - Throws: ``SharedStateError`` with code `tooLarge` or `invalidArgument`, naming the problem.
    @inlinable
    public static func validateValue<Bytes: Collection<UInt8>>(
        _ value: Bytes,
        limits: Limits = .default
    ) throws(SharedStateError) {
        if value.count > limits.maxValueBytes {
            throw SharedStateError(
                .tooLarge,
                "value too large: \(value.count) bytes is over the limit of \(limits.maxValueBytes) bytes"
            )
        }
        do {
            try JSONValidator.validate(value, maxDepth: limits.maxValueDepth)
        } catch {
            throw SharedStateError(.invalidArgument, "invalid JSON value: \(error)")
        }
    }
}
