import Foundation

/// Which of some keys exist, with their versions, at one revision (``SharedStateBackend/exists(_:)``).
public struct ExistsResult: Sendable, Equatable {
    /// The version of each key asked that exists; a key that does not is absent.
    public var versions: [String: UInt64]
    /// The revision the keys were looked up at.
    public var revision: UInt64

    /// A result of `versions` (the keys that exist) read at `revision`.
    public init(versions: [String: UInt64], revision: UInt64) {
        self.versions = versions
        self.revision = revision
    }

    /// Whether `key` existed at ``revision``.
    public func contains(_ key: String) -> Bool { versions[key] != nil }
}

/// The read behind ``SharedStateBackend/exists(_:)``.
public struct ExistsRead: SharedStateRead {
    /// The keys to look for.
    public var keys: [String]

    /// A read of which of `keys` exist.
    public init(keys: [String]) {
        self.keys = keys
    }

    /// syncd checks the keys (`RequestRules.validateExistsKeys`, as ``read(in:at:limits:)`` does
    /// under its own limits).
    public nonisolated(nonsending) func read(through client: SharedStateClient) async throws(SharedStateError) -> ExistsResult {
        let result = try await client.call(.exists(.with { $0.keys = keys }))
        guard case .exists(let answer) = result else { throw client.unexpected(result) }
        guard answer.versions.count == keys.count else {
            throw SharedStateError(.internalError, "syncd answered \(answer.versions.count) versions for \(keys.count) keys")
        }
        var versions: [String: UInt64] = [:]
        for (key, version) in zip(keys, answer.versions) where version != 0 { versions[key] = version }
        return ExistsResult(versions: versions, revision: answer.revision)
    }

    /// Looks the keys up in `entries` at `revision`, as syncd does: what the in-memory double runs.
    public func read(in entries: [String: Entry], at revision: UInt64, limits: Limits) throws(SharedStateError) -> ExistsResult {
        try RequestRules.validateExistsKeys(keys, limits: limits)
        var versions: [String: UInt64] = [:]
        for key in keys { if let entry = entries[key] { versions[key] = entry.version } }
        return ExistsResult(versions: versions, revision: revision)
    }
}

extension SharedStateBackend {
    /// Which of `keys` exist, with their versions, all at one revision, without their values:
    /// who is online, whether a setting was ever written.
    ///
    /// ```swift
    /// let present = try await sharedState.exists(["presence/panel", "presence/sensor"])
    /// if !present.contains("presence/sensor") { print("no sensor at revision \(present.revision)") }
    /// ```
    ///
    /// - Throws: `invalidArgument` for a malformed key or more keys than a transaction may hold
    ///   operations (`Limits/maxTransactionOperations`), `permissionDenied` when this client may
    ///   not read one of them.
    public nonisolated(nonsending) func exists(_ keys: [String]) async throws(SharedStateError) -> ExistsResult {
        try await perform(ExistsRead(keys: keys))
    }
}
