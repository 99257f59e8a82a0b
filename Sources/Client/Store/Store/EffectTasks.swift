import Synchronization

/// The running effect tasks of one store: what cancels them by id, all at once when the store
/// goes away, and what tells when none is left.
final class EffectTasks: Sendable {
    /// One cancellable piece of work: an effect's task, or the work a
    /// `withTaskCancellation(id:)` inside an effect registered.
    private struct Entry {
        let cancel: @Sendable () -> Void
        /// Set for effect tasks (what ``count`` counts); nil for nested registrations.
        let effect: EffectDescription?
        let keys: [EffectID]
    }

    private struct State {
        var nextKey = 0
        var entries: [Int: Entry] = [:]
        var keysByID: [EffectID: Set<Int>] = [:]
        var effectCount = 0
        var idleWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        var notYetRunning = 0
        var isShutDown = false

        mutating func insert(_ entry: Entry) -> Int {
            let key = nextKey
            nextKey += 1
            insert(entry, at: key)
            return key
        }

        mutating func insert(_ entry: Entry, at key: Int) {
            entries[key] = entry
            if entry.effect != nil { effectCount += 1 }
            for id in entry.keys { keysByID[id, default: []].insert(key) }
        }

        /// Removes the entry; returns the idle waiters to resume if no effect is left.
        mutating func remove(_ key: Int) -> [CheckedContinuation<Void, Never>] {
            guard let entry = entries.removeValue(forKey: key) else { return [] }
            for id in entry.keys {
                keysByID[id]?.remove(key)
                if keysByID[id]?.isEmpty == true { keysByID[id] = nil }
            }
            guard entry.effect != nil else { return [] }
            effectCount -= 1
            guard effectCount == 0 else { return [] }
            defer { idleWaiters = [:] }
            return Array(idleWaiters.values)
        }

        func cancellers(of id: EffectID) -> [@Sendable () -> Void] {
            (keysByID[id] ?? []).compactMap { entries[$0]?.cancel }
        }
    }

    private let state = Mutex(State())

    /// How many effect tasks are running.
    var count: Int { state.withLock { $0.effectCount } }

    /// The effects still running, each named by where it was made.
    var running: [EffectDescription] {
        state.withLock { state in
            state.entries.sorted { $0.key < $1.key }.compactMap(\.value.effect)
        }
    }

    /// How many started tasks have not begun to execute yet (so a test knows when an effect has
    /// reached its first suspension, such as a clock's sleep).
    var notYetRunning: Int { state.withLock { $0.notYetRunning } }

    /// Starts `operation` as a task cancellable by every id of `ids`; nil once the store shut down.
    ///
    /// The task is registered before it can run, so a `.cancel(id:)` reduced after this call
    /// reaches it. Inside it, ``EffectContext/current`` names this store and `path`.
    func start(
        priority: TaskPriority?,
        name: String?,
        ids: [EffectID],
        path: [EffectScope],
        description: EffectDescription,
        origin: EffectOrigin? = nil,
        operation: @escaping @Sendable () async -> Void
    ) -> Task<Void, Never>? {
        let context = EffectContext(effects: self, path: path, origin: origin)
        return state.withLock { state -> Task<Void, Never>? in
            guard !state.isShutDown else { return nil }
            state.notYetRunning += 1
            let key = state.nextKey
            state.nextKey += 1
            // The task cannot end before it is registered: its first step waits for this lock.
            let task = Task(name: name, priority: priority) { [weak self] in
                self?.state.withLock { $0.notYetRunning -= 1 }
                await EffectContext.$current.withValue(context) { await operation() }
                self?.remove(key)
            }
            state.insert(
                Entry(cancel: { task.cancel() }, effect: description, keys: ids.flatMap(\.cancellationKeys)),
                at: key
            )
            return task
        }
    }

    /// Registers work running inside an effect under `id` (for `withTaskCancellation(id:)`),
    /// after cancelling what runs under `id` already when `cancelInFlight` is set. Returns the key
    /// that ``remove(_:)`` takes when the work ends.
    func register(id: EffectID, cancelInFlight: Bool, cancel: @escaping @Sendable () -> Void) -> Int {
        if cancelInFlight { self.cancel(id: id) }
        return state.withLock { $0.insert(Entry(cancel: cancel, effect: nil, keys: id.cancellationKeys)) }
    }

    /// Forgets the registration under `key`.
    func remove(_ key: Int) {
        for waiter in state.withLock({ $0.remove(key) }) { waiter.resume() }
    }

    /// Cancels the work registered under `id` at its place in the feature tree, and under the
    /// same id anywhere below it.
    func cancel(id: EffectID) {
        for cancel in state.withLock({ $0.cancellers(of: id) }) { cancel() }
    }

    /// Cancels every task, and refuses new ones.
    func shutDown() {
        let cancellers = state.withLock { state in
            state.isShutDown = true
            return state.entries.values.map(\.cancel)
        }
        for cancel in cancellers { cancel() }
    }

    /// Cancels every running task; new ones may still start.
    func cancelAll() {
        for cancel in state.withLock({ $0.entries.values.map(\.cancel) }) { cancel() }
    }

    /// Returns once no effect task is running, or when the waiting task is cancelled.
    func waitUntilIdle() async {
        let waiter = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.effectCount == 0 || Task.isCancelled { return true }
                    state.idleWaiters[waiter] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.idleWaiters.removeValue(forKey: waiter) }?.resume()
        }
    }
}

/// What a running effect is, for a person: where it was made and its name, if it has one.
struct EffectDescription: Sendable, CustomStringConvertible {
    let location: SourceLocation?
    let name: String?

    var description: String {
        switch (name, location) {
        case (let name?, let location?): "\"\(name)\", made at \(location)"
        case (let name?, nil): "\"\(name)\""
        case (nil, let location?): "an effect made at \(location)"
        case (nil, nil): "an effect"
        }
    }
}

/// The store and place in the feature tree of the effect the current task belongs to.
struct EffectContext: Sendable {
    let effects: EffectTasks
    let path: [EffectScope]
    /// What started the effect.
    let origin: EffectOrigin?

    @TaskLocal static var current: EffectContext?
}
