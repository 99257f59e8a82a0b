import Foundation
import Logging
import SharedStateWire
import SyncEngine
import SyncServer

/// syncd's optional configuration file: JSON, read at start and again on SIGHUP.
///
/// ```json
/// {
///   "logLevel": "info",
///   "limits": { "maxValueBytes": 1048576, "maxKeyBytes": 512, "maxValueDepth": 100,
///               "maxRequestFrameBytes": 4194304, "maxTransactionOperations": 128, "maxWatchPrefixes": 64 },
///   "backend": "etcd",
///   "etcd": { "endpoints": ["http://10.0.0.1:2379", "http://10.0.0.2:2379"], "prefix": "/sharedstate/", "leaseTTLSeconds": 5 }
/// }
/// ```
/// Every field is optional; a missing one keeps its default (or the command line's value).
/// `backend` and `etcd` are read at start only: SIGHUP does not move the state elsewhere.
public struct ConfigurationFile: Decodable, Sendable, Equatable {
    /// The limits a file may set, each optional; see `Limits` for what each one bounds.
    public struct LimitsSection: Decodable, Sendable, Equatable {
        public var maxKeyBytes: Int?
        public var maxValueBytes: Int?
        public var maxValueDepth: Int?
        public var maxRequestFrameBytes: Int?
        public var maxTransactionOperations: Int?
        public var maxWatchPrefixes: Int?
        public var maxOutboundQueueBytes: Int?
        public var maxConnections: Int?
        public var maxConnectionsPerUser: Int?
        public var maxUnauthenticatedConnections: Int?
        public var reservedAdministratorConnections: Int?
        public var maxWatchesPerConnection: Int?
        public var maxWritesInFlightPerConnection: Int?
        public var handshakeTimeoutSeconds: Int?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case maxKeyBytes, maxValueBytes, maxValueDepth, maxRequestFrameBytes, maxTransactionOperations
            case maxWatchPrefixes, maxOutboundQueueBytes, maxConnections, maxConnectionsPerUser
            case maxUnauthenticatedConnections, reservedAdministratorConnections, maxWatchesPerConnection
            case maxWritesInFlightPerConnection, handshakeTimeoutSeconds
        }
    }

    /// Where the state is kept; see ``BackendConfiguration``.
    public struct EtcdSection: Decodable, Sendable, Equatable {
        public var endpoints: [String]?
        public var prefix: String?
        public var leaseTTLSeconds: Int?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case endpoints, prefix, leaseTTLSeconds
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case logLevel, limits, backend, etcd
    }

    /// trace, debug, info, notice, warning, error or critical.
    public var logLevel: String?
    /// Limits that replace the defaults.
    public var limits: LimitsSection?
    /// sqlite or etcd.
    public var backend: String?
    /// The etcd backend's settings.
    public var etcd: EtcdSection?

    /// Reads and checks the file at `path`.
    ///
    /// - Throws: ``DaemonStartError`` naming the file and what is wrong with it.
    public static func load(path: String) throws(DaemonStartError) -> ConfigurationFile {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw DaemonStartError("cannot read configuration file \(path): \(error.localizedDescription)")
        }
        let file: ConfigurationFile
        do {
            let decoder = JSONDecoder()
            decoder.allowsJSON5 = false
            file = try decoder.decode(ConfigurationFile.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw DaemonStartError(
                "configuration file \(path) is not valid JSON: \(context.underlyingError.map { "\($0)" } ?? context.debugDescription)")
        } catch let DecodingError.typeMismatch(_, context) {
            let line = JSONLines(String(decoding: data, as: UTF8.self)).line(of: context.codingPath)
            let place = line.map { ", line \($0)" } ?? ""
            throw DaemonStartError("configuration file \(path)\(place): \(Self.field(context)) has the wrong type")
        } catch {
            throw DaemonStartError("configuration file \(path): \(error)")
        }
        try refuseUnknownFields(in: data, path: path)
        _ = try file.level(path: path)
        _ = try file.applied(to: Limits(), path: path)
        return file
    }

    /// The log level the file sets, if any.
    func level(path: String) throws(DaemonStartError) -> Logger.Level? {
        guard let logLevel else { return nil }
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw DaemonStartError(
                "configuration file \(path): logLevel \"\(logLevel)\" is not one of trace, debug, info, notice, warning, error, critical"
            )
        }
        return level
    }

    /// `limits` with the file's values applied.
    func applied(to limits: Limits, path: String) throws(DaemonStartError) -> Limits {
        var result = limits
        guard let section = self.limits else { return result }
        let fields: [(String, Int?, WritableKeyPath<Limits, Int>, ClosedRange<Int>)] = [
            ("maxKeyBytes", section.maxKeyBytes, \.maxKeyBytes, 1...65_536),
            ("maxValueBytes", section.maxValueBytes, \.maxValueBytes, 2...(256 << 20)),
            ("maxValueDepth", section.maxValueDepth, \.maxValueDepth, 1...10_000),
            // Backup and restore move 1 MiB chunks: frames must hold one.
            ("maxRequestFrameBytes", section.maxRequestFrameBytes, \.maxRequestFrameBytes, ((1 << 20) + (1 << 16))...(1 << 30)),
            ("maxTransactionOperations", section.maxTransactionOperations, \.maxTransactionOperations, 1...100_000),
            ("maxWatchPrefixes", section.maxWatchPrefixes, \.maxWatchPrefixes, 1...100_000),
            ("maxOutboundQueueBytes", section.maxOutboundQueueBytes, \.maxOutboundQueueBytes, 65_536...(1 << 30)),
            ("maxConnections", section.maxConnections, \.maxConnections, 1...1_000_000),
            ("maxConnectionsPerUser", section.maxConnectionsPerUser, \.maxConnectionsPerUser, 1...1_000_000),
            ("maxUnauthenticatedConnections", section.maxUnauthenticatedConnections, \.maxUnauthenticatedConnections, 1...100_000),
            ("reservedAdministratorConnections", section.reservedAdministratorConnections, \.reservedAdministratorConnections, 0...1_000),
            ("maxWatchesPerConnection", section.maxWatchesPerConnection, \.maxWatchesPerConnection, 1...1_000_000),
            ("maxWritesInFlightPerConnection", section.maxWritesInFlightPerConnection, \.maxWritesInFlightPerConnection, 1...1_000_000),
            ("handshakeTimeoutSeconds", section.handshakeTimeoutSeconds, \.handshakeTimeoutSeconds, 1...3600),
        ]
        for (name, value, keyPath, range) in fields {
            guard let value else { continue }
            guard range.contains(value) else {
                throw DaemonStartError(
                    "configuration file \(path): limits.\(name) is \(value); it must be between \(range.lowerBound) and \(range.upperBound)"
                )
            }
            result[keyPath: keyPath] = value
        }
        return result
    }

    /// A misspelt field would otherwise be ignored without a word, its default kept.
    private static func refuseUnknownFields(in data: Data, path: String) throws(DaemonStartError) {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return }
        let sections: [(String?, [String: Any], [String])] = [
            (nil, object, CodingKeys.allCases.map(\.rawValue)),
            ("limits", object["limits"] as? [String: Any] ?? [:], LimitsSection.CodingKeys.allCases.map(\.rawValue)),
            ("etcd", object["etcd"] as? [String: Any] ?? [:], EtcdSection.CodingKeys.allCases.map(\.rawValue)),
        ]
        for (section, fields, allowed) in sections {
            for name in fields.keys.sorted() where !allowed.contains(name) {
                let keys = [section, name].compactMap { $0 }.map { JSONLines.Key($0) }
                let line = JSONLines(String(decoding: data, as: UTF8.self)).line(of: keys)
                let field = [section, name].compactMap { $0 }.joined(separator: ".")
                throw DaemonStartError(
                    "configuration file \(path)\(line.map { ", line \($0)" } ?? ""): unknown field \"\(field)\" (allowed: \(allowed.joined(separator: ", ")))"
                )
            }
        }
    }

    private static func field(_ context: DecodingError.Context) -> String {
        context.codingPath.map(\.stringValue).joined(separator: ".")
    }
}
