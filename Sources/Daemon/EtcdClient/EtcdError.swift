/// What a call to etcd can fail with, each case with a message fit for a person.
public enum EtcdError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No endpoint of the cluster answered, or the one that did has no leader. For a write,
    /// `outcomeUnknown` says the request may have reached etcd before the failure: it may or may
    /// not have been applied.
    case unavailable(String, outcomeUnknown: Bool)
    /// The revision asked for is older than the cluster's compacted revision.
    case compacted(requested: Int64, compactedRevision: Int64)
    /// An endpoint given to the client could not be read.
    case invalidEndpoint(String, String)
    /// etcd refused the request; `code` is gRPC's status code.
    case refused(code: String, message: String)

    public var description: String {
        switch self {
        case .unavailable(let message, let outcomeUnknown):
            outcomeUnknown
                ? "etcd is unavailable, and the write may or may not have been applied: \(message)" : "etcd is unavailable: \(message)"
        case .compacted(let requested, let compactedRevision):
            "revision \(requested) is compacted in etcd (its compacted revision is \(compactedRevision))"
        case .invalidEndpoint(let text, let problem):
            "invalid etcd endpoint \"\(text)\": \(problem)"
        case .refused(let code, let message):
            "etcd refused the request (\(code)): \(message)"
        }
    }
}
