import SharedStateWire

/// `put`: checked, queued, and handed to the engine with the other writes of the same read
/// (``ClientSession/submitQueuedWrites()``); answered when it commits.
///
/// The session reads most put frames by hand (``DecodedPut``); one SwiftProtobuf decoded is
/// served the same way.
extension Sharedstate_V1_PutRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try DecodedPut(self, requestID: call.id).serve(in: session, as: call)
    }
}

extension DecodedPut: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try RequestRules.validateCause(cause)
        let operation = try session.putOperation(key, value, ifVersion: ifVersion, isEphemeral: isEphemeral, limits: call.limits)
        return try session.queue(operation, cause: cause, call)
    }
}
