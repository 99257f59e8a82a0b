import Foundation

extension SharedStateBackend {
    /// The current value of a typed key, or its default when the key does not exist.
    ///
    /// - Throws: `invalidArgument` when the stored value does not decode as `Value`.
    public nonisolated(nonsending) func get<Value>(_ key: SharedKey<Value>) async throws(SharedStateError) -> Value {
        try await current(key).value
    }

    /// Sets a typed key; with `ephemeral`, bound to this connection (see
    /// ``put(_:value:ifVersion:ephemeral:)``).
    @discardableResult
    public nonisolated(nonsending) func set<Value>(
        _ key: SharedKey<Value>,
        to value: Value,
        ifVersion: UInt64? = nil,
        ephemeral: Bool = false
    ) async throws(SharedStateError) -> PutResult {
        try await put(key.name, value: try key.encode(value), ifVersion: ifVersion, ephemeral: ephemeral)
    }

    /// Reads a typed key, lets `body` change the value, and writes it back only if nobody wrote
    /// the key in between; on a conflict it reads again and retries.
    ///
    /// ```swift
    /// let count = try await client.update(.counter) { $0 += 1 }
    /// ```
    ///
    /// - Parameters:
    ///   - maxAttempts: How many times to try before giving up with `conflict`.
    ///   - key: The typed key to change.
    ///   - body: Changes the current value (the key's default when it does not exist); called again on each retry.
    /// - Returns: The value written.
    @discardableResult
    public nonisolated(nonsending) func update<Value>(
        _ key: SharedKey<Value>,
        maxAttempts: Int = 64,
        _ body: (inout Value) throws -> Void
    ) async throws -> Value {
        for _ in 0..<max(1, maxAttempts) {
            let current = try await current(key)
            var value = current.value
            try body(&value)
            do {
                try await set(key, to: value, ifVersion: current.version)
                return value
            } catch {
                if error.code != .conflict { throw error }
            }
        }
        throw SharedStateError(.conflict, "key \"\(key.name)\" kept changing; gave up after \(maxAttempts) attempts")
    }

    /// The value of a typed key now, then after every change to it: the default when the key is
    /// deleted or missing. Values that do not decode as `Value` are skipped.
    ///
    /// The stream ends when the connection ends; stop iterating to cancel the watch on syncd.
    public func values<Value>(of key: SharedKey<Value>) -> AsyncStream<Value> {
        let iterator = WatchIterator(watch(prefixes: [key.name], fromRevision: nil).makeAsyncIterator())
        return AsyncStream(unfolding: {
            while let batch = try? await iterator.next() {
                if case .success(let value) = key.value(after: batch) { return value }
            }
            return nil
        })
    }

    private nonisolated(nonsending) func current<Value>(_ key: SharedKey<Value>) async throws(SharedStateError) -> (
        value: Value, version: UInt64
    ) {
        let entry: Entry
        do {
            entry = try await get(key.name)
        } catch {
            guard error.code == .notFound else { throw error }
            return (key.defaultValue, 0)
        }
        return (try key.decode(entry.value), entry.version)
    }

    /// The value of a typed key now, then after every change: the default when it is missing or
    /// deleted, a failure when a value does not decode as `Value`.
    ///
    /// The stream ends with the watch's error (`unavailable` once the client closes). It reads the
    /// watch in the consumer's own task, so a slow consumer leaves the watch's batches to fold (see
    /// ``WatchStream``) instead of piling them up here.
    public func updates<Value>(of key: SharedKey<Value>) -> AsyncThrowingStream<Result<Value, SharedStateError>, Error> {
        let iterator = WatchIterator(watch(prefixes: [key.name], fromRevision: nil).makeAsyncIterator())
        return AsyncThrowingStream(unfolding: {
            while let batch = try await iterator.next() {
                if let update = key.value(after: batch) { return update }
            }
            return nil
        })
    }
}

/// Lets `AsyncStream(unfolding:)` pull from a watch's iterator, in the consumer's task.
///
/// `@unchecked Sendable`: the unfolding closure is only called by the stream's single consumer,
/// one call at a time, so the iterator is never used concurrently.
package final class WatchIterator: @unchecked Sendable {
    private var base: WatchStream.Iterator

    package init(_ base: WatchStream.Iterator) {
        self.base = base
    }

    package func next() async throws -> WatchBatch? {
        try await base.next()
    }
}

extension SharedKey {
    /// The key's value after `batch`, or nil if the batch says nothing about it: the default when
    /// a snapshot lacks the key or it was deleted, a failure when the value does not decode.
    ///
    /// Inlinable, so it is specialized for `Value` where the feature observes its key: generic,
    /// it looked up the metadata of `Result<Value, _>` and `Optional<Value>` at run time on every
    /// change (BENCHMARKS.md, issue 38, step 33).
    @inlinable
    package func value(after batch: WatchBatch) -> Result<Value, SharedStateError>? {
        // A prefix watch also sees keys that merely start with the name.
        guard let change = batch.changes.last(where: { $0.key == name }) else {
            return batch.kind.replacesState ? .success(defaultValue) : nil
        }
        switch change.type {
        case .put: return Result { () throws(SharedStateError) in try decode(change.entry.value) }
        case .delete: return .success(defaultValue)
        }
    }
}
