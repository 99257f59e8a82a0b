import Foundation
import SharedStateWire
import SyncEngine

/// The rules put, delete and transaction share: a write operation checked against the limits,
/// and the session an ephemeral put binds to.
package extension ClientSession {
    /// Checks a put or a delete made with `cause`, and queues it for the engine; it is answered
    /// when it commits.
    func queueWrite(_ operation: Sharedstate_V1_Operation.OneOf_Kind, cause: String, _ call: Call) throws(SharedStateError) -> Step {
        try RequestRules.validateCause(cause)
        return try queue(writeOperation(operation, limits: call.limits), cause: cause, call)
    }

    /// Queues a put or delete already checked against the limits, once the caller may write its
    /// key; it is answered when it commits.
    func queue(_ operation: WriteRequest.WriteOperation, cause: String, _ call: Call) throws(SharedStateError) -> Step {
        try requireWrite(operation.key, call.access)
        queue(operation.request, requestID: call.id, cause: cause)
        return .next
    }

    /// `operation` as the engine takes it, checked against `limits`.
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

    func putOperation(_ key: String, _ value: Data, ifVersion: UInt64?, isEphemeral: Bool, limits: Limits) throws(SharedStateError)
        -> WriteRequest.WriteOperation
    {
        try KeyRules.validateKey(key, limits: limits)
        do {
            try ValueRules.validateValue(value, limits: limits)
        } catch {
            throw SharedStateError(error.code, "key \(KeyRules.quoted(key)): \(error.message)")
        }
        // Off the writer: a schema's document that is not a schema, or an ephemeral schema.
        if SchemaKeys.isReserved(key) {
            try PrefixSchemas.checkSchemaWrites(
                in: .put(key: key, value: value, ifVersion: ifVersion, ephemeralSession: isEphemeral ? record.sessionID : 0))
        }
        return .put(key: key, value: value, ifVersion: ifVersion, ephemeralSession: ephemeralSession(isEphemeral))
    }

    /// The session to bind a put to: this one when it asks to be ephemeral, else none.
    func ephemeralSession(_ isEphemeral: Bool) -> UInt64 {
        guard isEphemeral else { return 0 }
        hasWrittenEphemeral = true
        return record.sessionID
    }
}

package extension WriteRequest.WriteOperation {
    /// The operation as a request of its own.
    var request: WriteRequest {
        switch self {
        case .put(let key, let value, let ifVersion, let ephemeralSession):
            .put(key: key, value: value, ifVersion: ifVersion, ephemeralSession: ephemeralSession)
        case .delete(let key, let ifVersion): .delete(key: key, ifVersion: ifVersion)
        }
    }
}
