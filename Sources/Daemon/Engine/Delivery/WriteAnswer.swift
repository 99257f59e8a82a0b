import SharedStateWire

/// The result of one client write, for the connection that sent it.
package struct WriteAnswer: Sendable {
    /// The id of the request it answers.
    package var requestID: UInt64
    package var result: Result<WriteOutcome, SharedStateError>
}

/// Where the answers to a connection's writes go: in syncd, the connection.
///
/// The engine gathers every answer of one commit for a target, in submission order, in the
/// commit's ``DeliveryRound``; the ``DeliverySink`` hands them over.
package protocol WriteAnswerTarget: AnyObject, Sendable {}
