import Foundation

/// An error that syncd or the client library reports, with a code programs can switch on and a
/// message for a person.
///
/// ```swift
/// do {
///     try await client.put("door/state", json: #""open""#, ifVersion: 3)
/// } catch let error as SharedStateError where error.code == .conflict {
///     // someone else wrote first; read again and retry
/// }
/// ```
public struct SharedStateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case notFound, conflict, compacted, permissionDenied, invalidArgument, tooLarge
            case unavailable, protocolViolation, internalError, futureRevision, limitReached, schemaViolation
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The key does not exist.
        public static let notFound = Code(.notFound)
        /// A compare failed: the key's version or value was not the expected one.
        public static let conflict = Code(.conflict)
        /// The requested revision has been compacted away from the change log.
        public static let compacted = Code(.compacted)
        /// The access policy does not allow this.
        public static let permissionDenied = Code(.permissionDenied)
        /// A malformed key, prefix, value or request.
        public static let invalidArgument = Code(.invalidArgument)
        /// A key, value or frame over its limit.
        public static let tooLarge = Code(.tooLarge)
        /// The daemon cannot be reached or cannot serve the request now.
        public static let unavailable = Code(.unavailable)
        /// The peer broke the wire protocol.
        public static let protocolViolation = Code(.protocolViolation)
        /// A bug or an unexpected failure inside the daemon.
        public static let internalError = Code(.internalError)
        /// A revision ahead of syncd's: the client saw commits this database does not have (a
        /// backup copied over it, a power loss with `--durability normal`). Start again from a
        /// snapshot.
        public static let futureRevision = Code(.futureRevision)
        /// A count limit is reached (clients, a user's clients, watches of a connection, open
        /// transfers): try again once one is freed.
        public static let limitReached = Code(.limitReached)
        /// A value breaks the schema that governs its key, or a schema being set is broken by
        /// values already written: ``SharedStateError/violations`` says where and how.
        public static let schemaViolation = Code(.schemaViolation)

        public var description: String {
            switch base {
            case .notFound: "notFound"
            case .conflict: "conflict"
            case .compacted: "compacted"
            case .permissionDenied: "permissionDenied"
            case .invalidArgument: "invalidArgument"
            case .tooLarge: "tooLarge"
            case .unavailable: "unavailable"
            case .protocolViolation: "protocol"
            case .internalError: "internal"
            case .futureRevision: "futureRevision"
            case .limitReached: "limitReached"
            case .schemaViolation: "schemaViolation"
            }
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence for a person, naming what was wrong.
    public var message: String
    /// With ``Code/schemaViolation``: the first rule the written value breaks, or, for a schema
    /// refused because values already written break it, up to 20 of those values' first
    /// violations. Empty otherwise.
    public var violations: [SchemaViolation]

    /// Creates an error with a code and a message for a person.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
        self.violations = []
    }

    /// Creates a ``Code/schemaViolation`` error carrying `violations`.
    public init(_ message: String, violations: [SchemaViolation]) {
        self.code = .schemaViolation
        self.message = message
        self.violations = violations
    }

    public var description: String { message }
}

extension SharedStateError.Code {
    /// The code as it travels on the wire.
    public var wireValue: Sharedstate_V1_ErrorCode {
        switch self {
        case .notFound: .notFound
        case .conflict: .conflict
        case .compacted: .compacted
        case .permissionDenied: .permissionDenied
        case .invalidArgument: .invalidArgument
        case .tooLarge: .tooLarge
        case .unavailable: .unavailable
        case .protocolViolation: .protocol
        case .futureRevision: .futureRevision
        case .limitReached: .limitReached
        case .schemaViolation: .schemaViolation
        default: .internal
        }
    }

    /// The code for a value read from the wire; unknown values become ``internalError``.
    public init(wireValue: Sharedstate_V1_ErrorCode) {
        switch wireValue {
        case .notFound: self = .notFound
        case .conflict: self = .conflict
        case .compacted: self = .compacted
        case .permissionDenied: self = .permissionDenied
        case .invalidArgument: self = .invalidArgument
        case .tooLarge: self = .tooLarge
        case .unavailable: self = .unavailable
        case .protocol: self = .protocolViolation
        case .futureRevision: self = .futureRevision
        case .limitReached: self = .limitReached
        case .schemaViolation: self = .schemaViolation
        default: self = .internalError
        }
    }
}

extension SharedStateError {
    /// The error as a wire message.
    public var wireValue: Sharedstate_V1_Error {
        .with {
            $0.code = code.wireValue
            $0.message = message
            $0.violations = violations.map(\.wireValue)
        }
    }

    /// The error a wire message describes.
    public init(wireValue: Sharedstate_V1_Error) {
        self.init(Code(wireValue: wireValue.code), wireValue.message)
        violations = wireValue.violations.map(SchemaViolation.init(wireValue:))
    }
}

extension SchemaViolation {
    /// The violation as a wire message.
    public var wireValue: Sharedstate_V1_SchemaViolation {
        .with {
            $0.key = key
            $0.pointer = pointer
            $0.rule = rule
            $0.limit = limit
            $0.found = found?.jsonText ?? ""
            $0.reason = reason
            $0.prefix = prefix
        }
    }

    /// The violation a wire message describes.
    public init(wireValue: Sharedstate_V1_SchemaViolation) {
        let found = wireValue.found.isEmpty ? nil : try? JSONValue(json: Data(wireValue.found.utf8))
        self.init(
            key: wireValue.key, pointer: wireValue.pointer, rule: wireValue.rule, limit: wireValue.limit, found: found,
            reason: wireValue.reason, prefix: wireValue.prefix)
    }
}
