/// `bytes` changed in one to three random places (a byte replaced, removed or inserted; never
/// empty): how the tests of the hand-written frame readers make frames that are almost right.
func mutated(_ bytes: [UInt8], using generator: inout some RandomNumberGenerator) -> [UInt8] {
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
