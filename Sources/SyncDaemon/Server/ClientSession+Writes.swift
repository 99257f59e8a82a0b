import Foundation
import SharedStateWire

/// Requests that write: checked here, queued, and handed to the engine together once per read
/// (``submitQueuedWrites()``); answered when they commit.
extension ClientSession {
    /// Checks a put and queues it for the engine; it is answered when it commits.
    func put(_ put: DecodedPut, _ call: Call) throws(SharedStateError) -> Step {
        try RequestRules.validateCause(put.cause)
        let operation = try putOperation(put.key, put.value, ifVersion: put.ifVersion, isEphemeral: put.isEphemeral, limits: call.limits)
        try requireWrite(put.key, call.access)
        queuedWrites.append((call.id, operation.request, put.cause))
        return .next
    }

    /// Checks a delete and queues it for the engine; it is answered when it commits.
    func delete(_ delete: Sharedstate_V1_DeleteRequest, _ call: Call) throws(SharedStateError) -> Step {
        try RequestRules.validateCause(delete.cause)
        let operation = try writeOperation(.delete(delete), limits: call.limits)
        try requireWrite(delete.key, call.access)
        queuedWrites.append((call.id, operation.request, delete.cause))
        return .next
    }

    /// Checks a transaction and queues it for the engine; it is answered when it commits.
    func transaction(_ transaction: Sharedstate_V1_TransactionRequest, _ call: Call) throws(SharedStateError) -> Step {
        let (id, limits, access) = (call.id, call.limits, call.access)
        try RequestRules.validateCause(transaction.cause)
        let request = try transactionRequest(transaction, limits: limits)
        if case .transaction(let compares, let onSuccess, let onFailure) = request {
            // A compare reveals whether a value matches: it needs read access.
            for compare in compares { try requireRead(compare.key, access) }
            for operation in onSuccess + onFailure { try requireWrite(operation.key, access) }
        }
        queuedWrites.append((id, request, transaction.cause))
        return .next
    }

    func writeOperation(_ operation: Sharedstate_V1_Operation.OneOf_Kind, limits: Limits) throws(SharedStateError)
        -> WriteRequest.WriteOperation
    {
        switch operation {
        case .put(let put):
            return try putOperation(
                put.key, put.value, ifVersion: put.hasIfVersion ? put.ifVersion : nil, isEphemeral: put.ephemeral, limits: limits)
        case .delete(let delete):
            try KeyRules.validateKey(delete.key, limits: limits)
            return .delete(key: delete.key, ifVersion: delete.hasIfVersion ? delete.ifVersion : nil)
        }
    }

    private func putOperation(_ key: String, _ value: Data, ifVersion: UInt64?, isEphemeral: Bool, limits: Limits) throws(SharedStateError)
        -> WriteRequest.WriteOperation
    {
        try KeyRules.validateKey(key, limits: limits)
        do {
            try ValueRules.validateValue(value, limits: limits)
        } catch {
            throw SharedStateError(error.code, "key \"\(key)\": \(error.message)")
        }
        return .put(key: key, value: value, ifVersion: ifVersion, ephemeralSession: ephemeralSession(isEphemeral))
    }

    func transactionRequest(_ transaction: Sharedstate_V1_TransactionRequest, limits: Limits) throws(SharedStateError)
        -> WriteRequest
    {
        try RequestRules.validateTransactionSize(
            transaction.compares.count + transaction.onSuccess.count + transaction.onFailure.count,
            limits: limits
        )
        var compares: [WriteRequest.Compare] = []
        for compare in transaction.compares {
            try KeyRules.validateKey(compare.key, limits: limits)
            switch compare.target {
            case .version(let version): compares.append(.init(key: compare.key, target: .version(version)))
            case .value(let value): compares.append(.init(key: compare.key, target: .value(value)))
            case nil:
                throw SharedStateError(.invalidArgument, "compare on key \"\(compare.key)\" names neither a version nor a value")
            }
        }
        func operations(_ list: [Sharedstate_V1_Operation]) throws(SharedStateError) -> [WriteRequest.WriteOperation] {
            var result: [WriteRequest.WriteOperation] = []
            for operation in list {
                guard let kind = operation.kind else {
                    throw SharedStateError(.invalidArgument, "transaction operation names neither put nor delete")
                }
                result.append(try writeOperation(kind, limits: limits))
            }
            return result
        }
        return .transaction(
            compares: compares,
            onSuccess: try operations(transaction.onSuccess),
            onFailure: try operations(transaction.onFailure)
        )
    }

    /// The session to bind a put to: this one when it asks to be ephemeral, else none.
    func ephemeralSession(_ isEphemeral: Bool) -> UInt64 {
        guard isEphemeral else { return 0 }
        hasWrittenEphemeral = true
        return record.sessionID
    }
}

extension WriteRequest.WriteOperation {
    /// The operation as a request of its own.
    var request: WriteRequest {
        switch self {
        case .put(let key, let value, let ifVersion, let ephemeralSession):
            .put(key: key, value: value, ifVersion: ifVersion, ephemeralSession: ephemeralSession)
        case .delete(let key, let ifVersion): .delete(key: key, ifVersion: ifVersion)
        }
    }
}
