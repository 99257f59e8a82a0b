/// The identity of one element of a ``StackState``: stable while the element is on the stack,
/// never reused by that stack.
///
/// Ids count up from 0 in the order elements are pushed, so a test can name them:
/// `.path(.element(id: 0, action: .refresh))`.
public struct StackElementID: Hashable, Comparable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The number of the push that made the element, counted from 0 for each stack.
    public let rawValue: Int

    /// The id with number `rawValue`.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// The id with number `value`, so a test can write `id: 0`.
    public init(integerLiteral value: Int) {
        self.init(rawValue: value)
    }

    /// The id as `#` and its number.
    public var description: String { "#\(rawValue)" }

    /// Whether `lhs` was pushed before `rhs`.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
