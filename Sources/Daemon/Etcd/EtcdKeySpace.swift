import EtcdClient
import Foundation
import SharedStateWire
import SyncEngine

/// Where syncd's keys live in etcd: under one prefix (`--etcd-prefix`, `/sharedstate/` by
/// default), so several deployments, or other software, can share a cluster.
package struct EtcdKeySpace: Sendable, Equatable {
    /// The prefix, ending in `/`.
    let prefix: String

    /// - Throws: `invalidArgument` for a prefix that does not start and end with `/`.
    package init(prefix: String) throws(SharedStateError) {
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

package extension EtcdKeySpace {
    /// The syncd entry of an etcd entry under the prefix; `session` names the session of its lease.
    func entry(_ kv: EtcdKeyValue, session: (Int64) -> UInt64) -> Entry? {
        guard let key = key(kv.key) else { return nil }
        return Entry(
            key: key, value: kv.value, version: UInt64(kv.version), createRevision: UInt64(kv.createRevision),
            modRevision: UInt64(kv.modRevision), ephemeralSession: session(kv.lease))
    }

    /// The revisions of a watch's events, in order: the events of one etcd revision make one.
    func revisions(of events: [EtcdEvent], session: (Int64) -> UInt64) -> [CommittedRevision] {
        var revisions: [CommittedRevision] = []
        var changes: [Change] = []
        var revision: Int64 = 0
        for event in events {
            if event.entry.modRevision != revision, !changes.isEmpty {
                revisions.append(CommittedRevision(revision: UInt64(revision), changes: changes))
                changes = []
            }
            revision = event.entry.modRevision
            switch event.kind {
            case .put:
                if let entry = entry(event.entry, session: session) { changes.append(.put(entry)) }
            case .delete:
                if let key = key(event.entry.key) { changes.append(.delete(key, revision: UInt64(revision))) }
            }
        }
        if !changes.isEmpty { revisions.append(CommittedRevision(revision: UInt64(revision), changes: changes)) }
        return revisions
    }
}
