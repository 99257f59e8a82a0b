import SharedStateWire

/// Restores: one write that makes the state equal to a backup, narrowed off the writer.
package extension StateEngine {
    /// Makes the entries equal to `backup`'s, as one revision (none when nothing differs).
    ///
    /// Finding what may differ walks the whole backup and the whole key order: for a million keys,
    /// a tenth of a second or more, during which no other write could commit if the writer did it.
    /// So it runs in the background (``BackgroundWork``) against a copy of the key order taken at
    /// revision R, and the writer then only rechecks the keys written after R, which a
    /// ``RestoreJournal`` keeps while restores are being narrowed, before it commits what differs.
    func restore(_ backup: [Entry], origin: WriteOrigin = .syncd("restore")) async -> Result<WriteOutcome, SharedStateError> {
        let (order, revision) = published.withLock { state in
            if state.restoreJournal == nil { state.restoreJournal = RestoreJournal() }
            state.restoreJournal!.restores += 1
            return (state.entries.order, state.revision)
        }
        let request: WriteRequest
        do {
            request = try await BackgroundWork.run { () throws(SharedStateError) -> WriteRequest in
                let backup = RestoreCandidates.inByteOrder(backup)
                let candidates = RestoreCandidates.find(in: backup, against: order, written: [])
                return .restore(
                    entries: candidates.entries,
                    currentKeys: candidates.currentKeys,
                    basis: RestoreBasis(revision: revision, backup: backup)
                )
            }
        } catch {
            finishRestore()
            return .failure(error)
        }
        return await withCheckedContinuation { continuation in
            submit(request, origin: origin) { [self] outcome in
                finishRestore()
                continuation.resume(returning: outcome)
            }
        }
    }

    /// The keys written after `revision`, for the writer planning a restore narrowed at it.
    func keysWritten(after revision: UInt64) -> [String] {
        published.withLock { $0.restoreJournal?.keys(writtenAfter: revision) ?? [] }
    }

    private func finishRestore() {
        published.withLock { state in
            state.restoreJournal?.restores -= 1
            if state.restoreJournal?.restores == 0 { state.restoreJournal = nil }
        }
    }
}
