import SharedStateWire
import SyncEngine

/// `transaction`: compares, then the operations of the branch they choose, as one revision;
/// checked, queued with the other writes of the same read, and answered when it commits.
extension Sharedstate_V1_TransactionRequest: ClientRequest {
    package func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step {
        try RequestRules.validateCause(cause)
        let request = try writeRequest(in: session, limits: call.limits)
        if case .transaction(let compares, let onSuccess, let onFailure) = request {
            // A compare reveals whether a value matches: it needs read access.
            for compare in compares { try session.requireRead(compare.key, call.access) }
            for operation in onSuccess + onFailure { try session.requireWrite(operation.key, call.access) }
        }
        session.queue(request, requestID: call.id, cause: cause)
        return .next
    }

    /// The transaction as the engine takes it, checked against `limits`.
    private func writeRequest(in session: ClientSession, limits: Limits) throws(SharedStateError) -> WriteRequest {
        try RequestRules.validateTransactionSize(compares.count + onSuccess.count + onFailure.count, limits: limits)
        var checked: [WriteRequest.Compare] = []
        for compare in compares {
            try KeyRules.validateKey(compare.key, limits: limits)
            switch compare.target {
            case .version(let version): checked.append(.init(key: compare.key, target: .version(version)))
            case .value(let value): checked.append(.init(key: compare.key, target: .value(value)))
            case nil:
                throw SharedStateError(
                    .invalidArgument, "compare on key \(KeyRules.quoted(compare.key)) names neither a version nor a value")
            }
        }
        func operations(_ list: [Sharedstate_V1_Operation]) throws(SharedStateError) -> [WriteRequest.WriteOperation] {
            var result: [WriteRequest.WriteOperation] = []
            for operation in list {
                guard let kind = operation.kind else {
                    throw SharedStateError(.invalidArgument, "transaction operation names neither put nor delete")
                }
                result.append(try session.writeOperation(kind, limits: limits))
            }
            return result
        }
        let request = WriteRequest.transaction(
            compares: checked, onSuccess: try operations(onSuccess), onFailure: try operations(onFailure))
        try PrefixSchemas.checkSchemaWrites(in: request)
        return request
    }
}
