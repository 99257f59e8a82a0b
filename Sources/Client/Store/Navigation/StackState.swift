import CustomDump
import Synchronization

/// A navigation stack of child features' states: an ordered collection whose elements keep a
/// stable ``StackElementID`` while they are on it.
///
/// ```swift
/// struct State: Equatable {
///     var path = StackState<Path.State>()
/// }
/// state.path.append(.sensor(SensorScreen.State(name: "kitchen")))   // element #0
/// state.path.pop(from: id)                                          // it and all above it
/// ```
///
/// Run the elements' reducer with ``Reducer/forEach(_:action:destination:fileID:filePath:line:column:)``;
/// it cancels an element's effects when the element leaves the stack. Two stacks are equal when
/// they hold equal elements under equal ids. It encodes as the array of its elements; a decoded
/// stack is a new stack, with new ids.
public struct StackState<Element> {
    @usableFromInline var elements: [Element]
    /// The ids of `elements`, in the same order.
    public private(set) var ids: [StackElementID]
    /// The id the next pushed element gets.
    public private(set) var nextID: StackElementID
    /// Which stack this is: a stack assigned over another is a different one, even where its ids
    /// are the same, so the old elements' effects end with them.
    @usableFromInline let origin: UInt64

    private static var nextOrigin: UInt64 { originCounter.add(1, ordering: .relaxed).newValue }

    /// An empty stack.
    public init() {
        self.elements = []
        self.ids = []
        self.nextID = 0
        self.origin = Self.nextOrigin
    }

    /// A stack of `elements`, the first at the bottom, with ids 0, 1, 2…
    public init(_ elements: some Sequence<Element>) {
        self.init()
        append(contentsOf: elements)
    }

    /// The element with `id`, if it is on the stack. Setting nil pops it and everything above it.
    public subscript(id id: StackElementID) -> Element? {
        get { index(of: id).map { elements[$0] } }
        set {
            guard let index = index(of: id) else { return }
            if let newValue {
                elements[index] = newValue
            } else {
                removeSubrange(index...)
            }
        }
    }

    /// The position of the element `id` (0 is the bottom), if it is on the stack.
    @inlinable
    public func index(of id: StackElementID) -> Int? {
        // Stacks are short; from the top, where most actions go.
        ids.lastIndex(of: id)
    }

    /// Pushes `element` under a new id, and returns the id.
    @discardableResult
    public mutating func push(_ element: Element) -> StackElementID {
        let id = nextID
        append(element)
        return id
    }

    /// Pushes `element` under `id`, which must not be on the stack; later ids count on from it.
    /// (An id below ``nextID`` that was popped is accepted: the caller chose it.)
    @usableFromInline
    mutating func push(_ element: Element, id: StackElementID) {
        elements.append(element)
        ids.append(id)
        if id >= nextID { nextID = StackElementID(rawValue: id.rawValue + 1) }
    }

    /// Removes the element `id` and every element above it.
    public mutating func pop(from id: StackElementID) {
        guard let index = index(of: id) else { return }
        removeSubrange(index...)
    }

    /// Removes every element above the element `id`, which stays on top.
    public mutating func pop(to id: StackElementID) {
        guard let index = index(of: id) else { return }
        removeSubrange((index + 1)...)
    }

    /// Changes the element `id` in place; false when it is not on the stack.
    @inlinable
    mutating func modify<Result>(id: StackElementID, _ body: (inout Element) -> Result) -> Result? {
        guard let index = index(of: id) else { return nil }
        return body(&elements[index])
    }
}

private let originCounter = Atomic<UInt64>(0)

extension StackState: RandomAccessCollection, MutableCollection, RangeReplaceableCollection {
    /// The position of the bottom of the stack, the root's first destination.
    public var startIndex: Int { elements.startIndex }
    /// The position after the top of the stack.
    public var endIndex: Int { elements.endIndex }

    /// The element at `position`; setting it keeps the element's id.
    public subscript(position: Int) -> Element {
        get { elements[position] }
        set { elements[position] = newValue }
    }

    /// Removes every element; the stack stays the same stack, and its ids are never reused.
    public mutating func removeAll(keepingCapacity keepCapacity: Bool = false) {
        elements.removeAll(keepingCapacity: keepCapacity)
        ids.removeAll(keepingCapacity: keepCapacity)
    }

    /// Swaps two elements, each keeping its id.
    public mutating func swapAt(_ i: Int, _ j: Int) {
        elements.swapAt(i, j)
        ids.swapAt(i, j)
    }

    /// Replaces elements; the new ones get new ids, the ones kept keep theirs.
    public mutating func replaceSubrange<C: Collection<Element>>(_ subrange: Range<Int>, with newElements: C) {
        let first = nextID.rawValue
        let newIDs = (0..<newElements.count).map { StackElementID(rawValue: first + $0) }
        nextID = StackElementID(rawValue: first + newElements.count)
        elements.replaceSubrange(subrange, with: newElements)
        ids.replaceSubrange(subrange, with: newIDs)
    }
}

extension StackState: ExpressibleByArrayLiteral {
    /// A stack of `elements`, bottom first, with ids counted from 0.
    public init(arrayLiteral elements: Element...) {
        self.init(elements)
    }
}

extension StackState: Equatable where Element: Equatable {
    /// Whether both hold equal elements under the same ids.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.ids == rhs.ids && lhs.elements == rhs.elements
    }
}

extension StackState: Hashable where Element: Hashable {
    /// Hashes the ids and the elements.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ids)
        hasher.combine(elements)
    }
}

extension StackState: Sendable where Element: Sendable {}

extension StackState: Codable where Element: Codable {
    /// Decodes an array of elements, bottom first, with ids counted from 0.
    public init(from decoder: any Decoder) throws {
        self.init(try [Element](from: decoder))
    }

    /// Encodes the elements as an array, bottom first; the ids are not kept.
    public func encode(to encoder: any Encoder) throws {
        try elements.encode(to: encoder)
    }
}

extension StackState: CustomDumpReflectable {
    /// Each element under its id (`#0`, `#1`…), so a test's diff shows which element changed.
    public var customDumpMirror: Mirror {
        Mirror(self, children: zip(ids, elements).map { (label: $0.description, value: $1 as Any) }, displayStyle: .struct)
    }
}
