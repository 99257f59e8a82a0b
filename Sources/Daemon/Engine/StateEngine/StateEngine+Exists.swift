/// `exists`: the versions of some keys, read together.
package extension StateEngine {
    /// The version of each of `keys`, in order (0: it does not exist), and the revision they were
    /// read at: one look under the lock, so they hold together.
    func versions(of keys: [String]) -> (versions: [UInt64], revision: UInt64) {
        published.withLock { state in
            (keys.map { state.entries[$0]?.version ?? 0 }, state.revision)
        }
    }
}
