/// An array's elements, read in order.
struct InPlaceUnkeyedContainer: UnkeyedDecodingContainer {
    let document: InPlaceDocument
    let path: InPlaceCodingPath
    let count: Int?
    private(set) var currentIndex = 0
    /// The next element's token.
    private var element: Int

    init(document: InPlaceDocument, array: Int, path: InPlaceCodingPath) {
        self.document = document
        self.path = path
        self.count = Int(document.tokens.tokens[array].count)
        self.element = array + 1
    }

    var codingPath: [any CodingKey] { path.codingPath }
    var isAtEnd: Bool { currentIndex >= count! }

    /// The next element's token, moving past it; past the end declines.
    private mutating func next() throws(InPlaceDocument.Declined) -> Int {
        guard !isAtEnd else { throw document.declined() }
        defer {
            element = Int(document.tokens.tokens[element].next)
            currentIndex += 1
        }
        return element
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { throw document.declined() }
        guard document.kind(at: element) == .null else { return false }
        _ = try next()
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try document.bool(at: next()) }
    mutating func decode(_ type: String.Type) throws -> String { try document.string(at: next()) }
    mutating func decode(_ type: Double.Type) throws -> Double { try document.double(at: next()) }
    mutating func decode(_ type: Float.Type) throws -> Float { try document.float(at: next()) }
    mutating func decode(_ type: Int.Type) throws -> Int { try document.integer(at: next()) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try document.integer(at: next()) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try document.integer(at: next()) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try document.integer(at: next()) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try document.integer(at: next()) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try document.integer(at: next()) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try document.integer(at: next()) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try document.integer(at: next()) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try document.integer(at: next()) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try document.integer(at: next()) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let index = currentIndex
        return try document.value(T.self, at: next(), path: .index(index, parent: path))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let index = currentIndex
        return try InPlaceDecoder(document: document, token: next(), path: .index(index, parent: path)).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let index = currentIndex
        return try InPlaceDecoder(document: document, token: next(), path: .index(index, parent: path)).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let index = currentIndex
        return InPlaceDecoder(document: document, token: try next(), path: .index(index, parent: path))
    }
}
