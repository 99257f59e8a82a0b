import Foundation

/// A TCP address as syncd's and syncctl's options take it: `HOST:PORT`, `[::1]:PORT` for IPv6
/// (`syncd --metrics-address`, `syncctl inspect --address`).
package struct HostAndPort: Equatable, Sendable {
    /// The host, without the brackets of an IPv6 address.
    package var host: String
    /// From 0 to 65535; 0 asks for a free port.
    package var port: Int

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// The address in `text`; nil when it is not `HOST:PORT` with a port from 0 to 65535.
    package init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port)
        else { return nil }
        self.host = String(text[..<colon]).trimmingCharacters(in: ["[", "]"])
        self.port = port
    }
}
