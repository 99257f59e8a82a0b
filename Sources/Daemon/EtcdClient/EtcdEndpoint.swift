import Foundation

/// One member of an etcd cluster, as its clients reach it: `http://HOST:PORT`, or `HOST:PORT`.
///
/// Only plain HTTP/2 (etcd's `http://` client URLs) is spoken; `https://` is refused by name.
public struct EtcdEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads an endpoint as etcd's `--advertise-client-urls` writes it.
    ///
    /// - Throws: ``EtcdError/invalidEndpoint(_:_:)`` naming the text and what is wrong with it.
    public init(parsing text: String) throws(EtcdError) {
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        if rest.hasPrefix("https://") {
            throw .invalidEndpoint(text, "TLS endpoints are not supported; give the cluster's http:// client URLs")
        }
        if rest.hasPrefix("http://") { rest = rest.dropFirst("http://".count) }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let colon = rest.lastIndex(of: ":"), colon != rest.startIndex else {
            throw .invalidEndpoint(text, "expected HOST:PORT, such as http://127.0.0.1:2379")
        }
        var host = rest[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port) else {
            throw .invalidEndpoint(text, "the port must be a number from 1 to 65535")
        }
        self.init(host: String(host), port: port)
    }

    /// Reads a comma-separated list of endpoints, as `--etcd-endpoints` takes them.
    public static func list(parsing text: String) throws(EtcdError) -> [EtcdEndpoint] {
        let parts = text.split(separator: ",").map { String($0) }.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        guard !parts.isEmpty else { throw .invalidEndpoint(text, "no endpoint given") }
        var endpoints: [EtcdEndpoint] = []
        for part in parts { endpoints.append(try EtcdEndpoint(parsing: part)) }
        return endpoints
    }

    public var description: String {
        host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
    }
}
