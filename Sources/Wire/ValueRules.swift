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
