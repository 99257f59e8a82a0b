import Foundation

/// Who gets an answer from the inspector: a request carrying the page's token, sent to the
/// address it listens on, and not from a page of another origin.
struct InspectorGate: Sendable {
    /// 128 random bits, as 32 hexadecimal digits; new on each start.
    let token: String
    /// The `Host` values that name the listening address (see ``InspectorAddress/acceptedHosts(port:host:)``).
    let acceptedHosts: Set<String>

    init(token: String = Self.newToken(), acceptedHosts: Set<String>) {
        self.token = token
        self.acceptedHosts = acceptedHosts
    }

    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(format: "%08x", UInt32.random(in: .min ... .max, using: &generator)) }.joined()
    }

    /// Why a request is refused, or nil when it may be answered.
    ///
    /// - Parameters:
    ///   - query: The request's query parameters.
    ///   - header: The value of a request header, by lowercased name.
    func refusal(query: [String: String], header: (String) -> String?) -> String? {
        guard let host = header("host"), acceptedHosts.contains(host.lowercased()) else {
            return "forbidden: the Host header does not name the inspector's address"
        }
        guard let given = query["token"], Self.constantTimeEqual(given, token) else {
            return "forbidden: the URL's token is missing or wrong (use the URL syncctl inspect printed)"
        }
        if let origin = header("origin"), !acceptedHosts.contains(where: { origin == "http://" + $0 }) {
            return "forbidden: a page of another origin (\(origin)) may not read the inspector"
        }
        if header("sec-fetch-site") == "cross-site" {
            return "forbidden: a page of another site may not read the inspector"
        }
        return nil
    }

    /// Compares without stopping at the first difference, so the time taken tells nothing of
    /// how much of a guess was right.
    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
