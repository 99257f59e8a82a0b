import EtcdClient
import Foundation
import SharedStateWire

/// Where syncd's keys live in etcd: under one prefix (`--etcd-prefix`, `/sharedstate/` by
/// default), so several deployments, or other software, can share a cluster.
struct EtcdKeySpace: Sendable, Equatable {
    /// The prefix, ending in `/`.
    let prefix: String

    /// - Throws: `invalidArgument` for a prefix that does not start and end with `/`.
    init(prefix: String) throws(SharedStateError) {
        guard prefix.hasPrefix("/"), prefix.hasSuffix("/") else {
            throw SharedStateError(.invalidArgument, "the etcd prefix \"\(prefix)\" must start and end with \"/\", as /sharedstate/ does")
        }
        self.prefix = prefix
    }

    /// The etcd key of `key`.
    func etcdKey(_ key: String) -> Data { Data((prefix + key).utf8) }

    /// The syncd key of an etcd key; nil for one outside the prefix, or not UTF-8.
    func key(_ etcdKey: Data) -> String? {
        guard let whole = String(data: etcdKey, encoding: .utf8), whole.hasPrefix(prefix) else { return nil }
        return String(whole.dropFirst(prefix.count))
    }

    /// The etcd range of every syncd key.
    var range: (key: Data, end: Data) {
        let start = Data(prefix.utf8)
        return (start, EtcdKeyRange.end(ofPrefix: start))
    }
}
