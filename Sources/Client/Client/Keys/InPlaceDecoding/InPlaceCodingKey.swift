/// A key made up by the decoder: an array's index, or `super`.
struct InPlaceCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
    }

    init(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }

    /// The key of an array's element, named as JSONDecoder names it.
    init(index: Int) {
        self.stringValue = "Index \(index)"
        self.intValue = index
    }

    static let `super` = InPlaceCodingKey(stringValue: "super")
}
