/// An object's members, found by key among its tokens.
struct InPlaceKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let document: InPlaceDocument
    /// The object's token.
    let object: Int
    let path: InPlaceCodingPath

    var codingPath: [any CodingKey] { path.codingPath }
    var allKeys: [Key] { document.memberNames(in: object).compactMap(Key.init(stringValue:)) }

    func contains(_ key: Key) -> Bool { document.member(named: key.stringValue, in: object) != nil }

    /// The member's value token; a missing key declines (JSONDecoder's error is its own).
    private func value(_ key: Key) throws(InPlaceDocument.Declined) -> Int {
        guard let value = document.member(named: key.stringValue, in: object) else { throw document.declined() }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try document.kind(at: value(key)) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try document.bool(at: value(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try document.string(at: value(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try document.double(at: value(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try document.float(at: value(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try document.integer(at: value(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try document.integer(at: value(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try document.integer(at: value(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try document.integer(at: value(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try document.integer(at: value(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try document.integer(at: value(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try document.integer(at: value(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try document.integer(at: value(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try document.integer(at: value(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try document.integer(at: value(key)) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try document.value(T.self, at: value(key), path: .key(key, parent: path))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try InPlaceDecoder(document: document, token: value(key), path: .key(key, parent: path)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try InPlaceDecoder(document: document, token: value(key), path: .key(key, parent: path)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        guard let value = document.member(named: InPlaceCodingKey.super.stringValue, in: object) else { throw document.declined() }
        return InPlaceDecoder(document: document, token: value, path: .key(InPlaceCodingKey.super, parent: path))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        InPlaceDecoder(document: document, token: try value(key), path: .key(key, parent: path))
    }
}
