/// The `Decoder` for one value of an in-place decoding, and the container of that value when
/// it is a single one.
struct InPlaceDecoder: Decoder, SingleValueDecodingContainer {
    let document: InPlaceDocument
    /// The value's first token.
    let token: Int
    let path: InPlaceCodingPath

    var codingPath: [any CodingKey] { path.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard document.kind(at: token) == .object else { throw document.declined() }
        return KeyedDecodingContainer(InPlaceKeyedContainer<Key>(document: document, object: token, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard document.kind(at: token) == .array else { throw document.declined() }
        return InPlaceUnkeyedContainer(document: document, array: token, path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { document.kind(at: token) == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try document.bool(at: token) }
    func decode(_ type: String.Type) throws -> String { try document.string(at: token) }
    func decode(_ type: Double.Type) throws -> Double { try document.double(at: token) }
    func decode(_ type: Float.Type) throws -> Float { try document.float(at: token) }
    func decode(_ type: Int.Type) throws -> Int { try document.integer(at: token) }
    func decode(_ type: Int8.Type) throws -> Int8 { try document.integer(at: token) }
    func decode(_ type: Int16.Type) throws -> Int16 { try document.integer(at: token) }
    func decode(_ type: Int32.Type) throws -> Int32 { try document.integer(at: token) }
    func decode(_ type: Int64.Type) throws -> Int64 { try document.integer(at: token) }
    func decode(_ type: UInt.Type) throws -> UInt { try document.integer(at: token) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try document.integer(at: token) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try document.integer(at: token) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try document.integer(at: token) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try document.integer(at: token) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try document.value(T.self, at: token, path: path) }
}
