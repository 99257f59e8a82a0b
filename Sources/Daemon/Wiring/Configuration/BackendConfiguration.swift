import EtcdClient
import Foundation
import SyncEngine
import SyncEtcd

/// Which backend syncd keeps its state in (`--backend`, or `"backend"` in the configuration file).
public enum BackendConfiguration: Sendable, Equatable {
    /// A SQLite database on this host (the default).
    case sqlite
    /// An etcd cluster shared by several hosts.
    case etcd(Etcd)

    /// Where and how to reach etcd.
    public struct Etcd: Sendable, Equatable {
        /// The cluster's client URLs (`http://HOST:PORT` or `HOST:PORT`), tried in order.
        public var endpoints: [String]
        /// Where syncd's keys live in etcd; starts and ends with `/`.
        public var prefix: String = "/sharedstate/"
        /// How long a dead host's ephemeral keys outlive it.
        public var leaseTTLSeconds: Int = 5

        public init(endpoints: [String], prefix: String = "/sharedstate/", leaseTTLSeconds: Int = 5) {
            self.endpoints = endpoints
            self.prefix = prefix
            self.leaseTTLSeconds = leaseTTLSeconds
        }
    }

    /// The backend the command line and the configuration file ask for: a command-line value
    /// wins over the file's.
    ///
    /// - Throws: ``DaemonStartError`` for an unknown backend name, etcd without endpoints, an
    ///   endpoint that is not one, a prefix that does not start and end with `/`, a TTL out of range.
    public static func resolve(
        name: String?, endpoints: String?, prefix: String?, leaseTTLSeconds: Int?, file: ConfigurationFile?
    ) throws(DaemonStartError) -> BackendConfiguration {
        switch name ?? file?.backend ?? "sqlite" {
        case "sqlite":
            return .sqlite
        case "etcd":
            let listed = endpoints.map { $0.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } }
            var etcd = Etcd(endpoints: listed ?? file?.etcd?.endpoints ?? [])
            etcd.prefix = prefix ?? file?.etcd?.prefix ?? etcd.prefix
            etcd.leaseTTLSeconds = leaseTTLSeconds ?? file?.etcd?.leaseTTLSeconds ?? etcd.leaseTTLSeconds
            guard !etcd.endpoints.isEmpty, !etcd.endpoints.contains("") else {
                throw DaemonStartError("--backend etcd needs --etcd-endpoints URL[,URL...] (or etcd.endpoints in the configuration file)")
            }
            for endpoint in etcd.endpoints {
                do { _ = try EtcdEndpoint(parsing: endpoint) } catch { throw DaemonStartError("etcd endpoint: \(error)") }
            }
            do { _ = try EtcdKeySpace(prefix: etcd.prefix) } catch { throw DaemonStartError(error.message) }
            guard (1...3600).contains(etcd.leaseTTLSeconds) else {
                throw DaemonStartError("the etcd lease TTL is \(etcd.leaseTTLSeconds) s; it must be between 1 and 3600 seconds")
            }
            return .etcd(etcd)
        case let other:
            throw DaemonStartError("unknown backend \"\(other)\": it is sqlite (the default) or etcd")
        }
    }
}
