/// Checks that bytes are exactly one JSON document (RFC 8259) without building any objects: the
/// package's one grammar (``JSONScanner``) with nothing kept.
///
/// syncd stores values as the bytes clients sent, so it only needs to know they are well-formed:
/// valid UTF-8, one value with optional surrounding whitespace, nesting no deeper than a limit.
/// Decoding into `Codable` types happens in clients, never on the daemon's write path.
///
/// ```swift
/// try JSONValidator.validate(Array(#"{"on":true}"#.utf8))
/// ```
public struct JSONValidator {
    /// Why a document was refused and the byte offset where that became clear.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong, for a person.
        public var reason: String
        /// The offset of the offending byte.
        public var offset: Int

        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Validates `bytes` as one JSON document.
    ///
    /// Inlinable, so that a caller's `Data` or array is specialized where it is called and its
    /// bytes reached directly, not through the protocol at run time.
    ///
    /// - Parameters:
    ///   - bytes: The document.
    ///   - maxDepth: The deepest nesting of arrays and objects allowed.
    /// - Throws: ``Failure`` naming the first problem.
    @inlinable
    public static func validate<Bytes: Sequence<UInt8>>(_ bytes: Bytes, maxDepth: Int = 100) throws(Failure) {
        let outcome: Failure?? = bytes.withContiguousStorageIfAvailable { (buffer) -> Failure? in
            do throws(Failure) {
                try validate(UnsafeRawBufferPointer(buffer), maxDepth: maxDepth)
                return nil
            } catch {
                return error
            }
        }
        switch outcome {
        case .some(.some(let failure)):
            throw failure
        case .some(.none):
            return
        case .none:
            try validate(Array(bytes), maxDepth: maxDepth)
        }
    }

    /// Validates the bytes in `buffer` as one JSON document.
    public static func validate(_ buffer: UnsafeRawBufferPointer, maxDepth: Int = 100) throws(Failure) {
        var scanner = JSONScanner(bytes: buffer, maxDepth: maxDepth, sink: NoTokens())
        if !scanner.scanDocument(), let failure = scanner.failure { throw failure }
    }
}

/// The sink of a check that keeps nothing: the scan is the whole check.
private struct NoTokens: JSONTokenSink {
    func open(_ kind: JSONTokens.Kind, at position: Int) {}
    func close(_ opened: Void, end: Int, count: Int) -> String? { nil }
    func string(start: Int, end: Int, hasEscapes: Bool, isKey: Bool) -> String? { nil }
    func scalar(_ kind: JSONTokens.Kind, start: Int, end: Int, isInteger: Bool) {}
}
