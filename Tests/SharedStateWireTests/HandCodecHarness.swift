/// The one differential harness of the hand-written codecs (`SharedStateWire/HandCoding`, D10–D16):
/// each is held to SwiftProtobuf. A writer's bytes are SwiftProtobuf's for every shape its tests
/// make; a reader reads what SwiftProtobuf reads from every frame of the shape it takes, and from
/// frames damaged anywhere it reads nothing (leaving them to SwiftProtobuf) or exactly what
/// SwiftProtobuf reads. `DecodedPutTests`, `WriteAnswerFrameTests` and `WatchEventFrameTests` run
/// their codecs through it.
enum HandCodecHarness {
    /// Damages `seeds` `rounds` times (``mutated(_:using:)``) and reads each result both ways:
    /// returns a description of each frame the hand reader read otherwise than SwiftProtobuf, and
    /// how many it read at all (the check ran only on those).
    ///
    /// - Parameters:
    ///   - read: The hand reader; nil leaves the bytes to SwiftProtobuf.
    ///   - reference: What SwiftProtobuf reads from the bytes, as the same kind of value; nil when
    ///     it refuses them or reads another kind of frame.
    static func damage<Value: Equatable>(
        _ seeds: [[UInt8]], rounds: Int = 50_000, read: ([UInt8]) -> Value?, reference: ([UInt8]) -> Value?
    ) -> (disagreements: [String], read: Int) {
        var generator = SystemRandomNumberGenerator()
        var disagreements: [String] = []
        var readCount = 0
        for _ in 0..<rounds {
            let bytes = mutated(seeds.randomElement(using: &generator)!, using: &generator)
            guard let value = read(bytes) else { continue }
            readCount += 1
            if value != reference(bytes) { disagreements.append("\(bytes)") }
        }
        return (disagreements, readCount)
    }

    /// `bytes` changed in one to three random places (a byte replaced, removed or inserted; never
    /// empty): frames that are almost right.
    static func mutated(_ bytes: [UInt8], using generator: inout some RandomNumberGenerator) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            let position = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
            case 1: bytes.remove(at: position)
            default: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: position)
            }
            if bytes.isEmpty { bytes = [0] }
        }
        return bytes
    }
}
