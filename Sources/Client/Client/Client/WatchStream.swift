/// The batches of one watch, in revision order: a snapshot or replay first, then every change.
///
/// ```swift
/// for try await batch in client.watch(prefixes: ["door/"]) {
///     print(batch.revision, batch.changes)
/// }
/// ```
///
/// However slow the consumer, what waits for it is bounded by the keys the watch selects: past a
/// bound, undelivered batches fold into one ``WatchBatch/Kind-swift.struct/resync`` batch that
/// carries the latest change of each key they touched. The consumer may then miss intermediate
/// values; it never misses the latest value of a key, nor a deletion, nor gets half a revision.
///
/// Stop iterating (or cancel the iterating task) to end the watch.
public struct WatchStream: AsyncSequence, Sendable {
    /// A snapshot, the changes of one revision, progress or a resync.
    public typealias Element = WatchBatch
    /// The `SharedStateError` that ended the watch; a cancelled consumer ends it without one.
    public typealias Failure = any Error

    let buffer: WatchBuffer
    private let lifetime: Lifetime

    /// A stream fed through `buffer`; the watch ends when the stream and its iterators are gone.
    package init(buffer: WatchBuffer) {
        self.buffer = buffer
        self.lifetime = Lifetime(buffer: buffer)
    }

    /// A stream of `batches`, for a ``SharedStateBackend`` of your own: a test double that ends
    /// its watches with an error, a proxy that records what it passes on.
    ///
    /// ```swift
    /// func watch(prefixes: [String], fromRevision: UInt64?) -> WatchStream {
    ///     WatchStream(AsyncThrowingStream<WatchBatch, any Error> { $0.finish(throwing: SharedStateError(.permissionDenied, "no")) })
    /// }
    /// ```
    ///
    /// The stream ends when `batches` does, with its error if it throws. A consumer that stops
    /// iterating (or is cancelled) cancels the task that reads `batches`. A consumer that falls
    /// behind gets the batches folded, as from syncd (see the type's discussion).
    public init<Batches: AsyncSequence & Sendable>(_ batches: Batches) where Batches.Element == WatchBatch {
        let buffer = WatchBuffer()
        let reader = Task {
            do {
                for try await batch in batches { buffer.yield(batch) }
                buffer.finish()
            } catch {
                buffer.finish(throwing: error)
            }
        }
        buffer.onTermination { reader.cancel() }
        self.init(buffer: buffer)
    }

    /// A stream that ends with `error` at its first element.
    package static func failed(_ error: any Error) -> WatchStream {
        let buffer = WatchBuffer()
        buffer.finish(throwing: error)
        return WatchStream(buffer: buffer)
    }

    /// The highest revision the watch has received, whether its consumer took it yet or not.
    package var latestRevision: UInt64 { buffer.latestRevision }

    /// Calls `handle` with every batch, in order, until the watch ends (returns) or fails
    /// (throws); on the main actor, like a `for try await` over the stream. Under
    /// ``MainEventLoop``, a batch that arrives while it waits is handled inside the socket read
    /// that brought it, not by resuming this task (see ``WatchBuffer/handleOnMainActor(_:)``).
    @MainActor @usableFromInline
    package func handleEach(_ handle: @escaping @MainActor @Sendable (WatchBatch) -> Void) async throws {
        buffer.handleOnMainActor(handle)
        for try await batch in self { handle(batch) }
    }

    /// An iterator over the watch's batches; the watch ends when the last iterator and stream go.
    public func makeAsyncIterator() -> Iterator {
        Iterator(buffer: buffer, lifetime: lifetime)
    }

    /// Iterates a ``WatchStream``.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let buffer: WatchBuffer
        fileprivate let lifetime: Lifetime

        /// The next batch, waiting for one; nil once the watch ended without an error (its
        /// consuming task was cancelled, or the stream it was made from finished).
        public mutating func next() async throws -> WatchBatch? {
            try await buffer.next()
        }

        /// The next batch, awaited on the caller's actor (what `for try await` calls).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> WatchBatch? {
            try await buffer.next(isolation: actor)
        }
    }
}

/// Ends the watch when the last stream or iterator that shares it goes away.
private final class Lifetime: Sendable {
    let buffer: WatchBuffer

    init(buffer: WatchBuffer) {
        self.buffer = buffer
    }

    deinit {
        buffer.terminate()
    }
}
