import SharedStateWire

/// The result of one client write, for the connection that sent it.
package struct WriteAnswer: Sendable {
    /// The id of the request it answers.
    package var requestID: UInt64
    package var result: Result<WriteOutcome, SharedStateError>
}

/// Where the answers to a connection's writes go.
///
/// The writer hands each target every answer of one group commit in a single call, and the
/// hand-offs of all targets together in one ``DeliveryBatch``, so a connection with many writes in
/// flight costs one hand-off per commit, not one per write.
package protocol WriteAnswerTarget: AnyObject, Sendable {
    /// Takes the answers of one commit, in the order the writes were submitted, joining `batch`.
    /// It must only hand them over, never block: it runs on the writer's thread.
    func receive(_ answers: [WriteAnswer], in batch: inout DeliveryBatch)

    /// Takes the one answer of a commit that had one write from this target: the lone write's
    /// path, where an array of one would be an allocation of its own.
    func receive(_ answer: WriteAnswer, in batch: inout DeliveryBatch)
}

package extension WriteAnswerTarget {
    func receive(_ answer: WriteAnswer, in batch: inout DeliveryBatch) {
        receive([answer], in: &batch)
    }
}
