/// The keys and indices from the top of a document to a value, kept as links to the parent
/// and turned into `codingPath` only when a `Decodable` asks for it.
indirect enum InPlaceCodingPath {
    case root
    case key(any CodingKey, parent: InPlaceCodingPath)
    case index(Int, parent: InPlaceCodingPath)

    var codingPath: [any CodingKey] {
        var keys: [any CodingKey] = []
        var path = self
        while true {
            switch path {
            case .root: return keys.reversed()
            case .key(let key, let parent):
                keys.append(key)
                path = parent
            case .index(let index, let parent):
                keys.append(InPlaceCodingKey(index: index))
                path = parent
            }
        }
    }
}
