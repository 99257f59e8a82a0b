/// A policy file as written, before names are looked up: `{"grants": [...]}`, every field of the
/// expected type, no field unknown (a misspelt `"write"` must not silently grant nothing).
package struct PolicyDocument: Decodable {
    /// One grant as written; ``AccessPolicy/load(path:daemonUser:)`` checks what each needs.
    struct GrantEntry: Decodable {
        var prefix: String?
        var users: [Member]?
        var groups: [Member]?
        var read: Bool?
        var write: Bool?

        private enum CodingKeys: String, CodingKey, CaseIterable {
            case prefix, users, groups, read, write
        }

        init(from decoder: any Decoder) throws {
            try PolicyDocument.refuseUnknownFields(of: decoder, allowed: CodingKeys.allCases.map(\.rawValue))
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            prefix = try fields.decodeIfPresent(String.self, forKey: .prefix)
            users = try fields.decodeIfPresent([Member].self, forKey: .users)
            groups = try fields.decodeIfPresent([Member].self, forKey: .groups)
            read = try fields.decodeIfPresent(Bool.self, forKey: .read)
            write = try fields.decodeIfPresent(Bool.self, forKey: .write)
        }
    }

    /// A user or group: a name to look up, or a number.
    enum Member: Decodable {
        case name(String)
        case id(UInt32)

        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer()
            if let name = try? value.decode(String.self) {
                self = .name(name)
            } else if let id = try? value.decode(UInt32.self) {
                self = .id(id)
            } else {
                throw DecodingError.typeMismatch(
                    Member.self, .init(codingPath: decoder.codingPath, debugDescription: "a name or a number"))
            }
        }
    }

    var grants: [GrantEntry]

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case grants
    }

    package init(from decoder: any Decoder) throws {
        try Self.refuseUnknownFields(of: decoder, allowed: CodingKeys.allCases.map(\.rawValue))
        grants = try decoder.container(keyedBy: CodingKeys.self).decode([GrantEntry].self, forKey: .grants)
    }

    /// Throws for the first field of the object `decoder` reads that is not in `allowed`.
    private static func refuseUnknownFields(of decoder: any Decoder, allowed: [String]) throws {
        let fields = try decoder.container(keyedBy: AnyField.self)
        for field in fields.allKeys where !allowed.contains(field.stringValue) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath + [field],
                    debugDescription: "unknown field \"\(field.stringValue)\" (allowed: \(allowed.joined(separator: ", ")))"
                )
            )
        }
    }

    private struct AnyField: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
