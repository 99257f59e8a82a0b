import NIOCore
import SyncEngine

/// The frames of one round's whole revisions, made once by the sink and shared by every
/// connection whose watch takes one under the same id: clients number their watches from 1, so
/// most connections share a frame rather than each copying one. Filled before the round's
/// batch is dispatched, only read after (hence `@unchecked Sendable`).
final class RoundFrames: @unchecked Sendable {
    let revisions: [CommittedRevision]
    /// Each revision's first whole frame, by the revision's index; any other in ``others``.
    private var whole: [(watchID: UInt64, frame: ByteBuffer)?] = []
    private var others: [(revision: Int, watchID: UInt64, frame: ByteBuffer)] = []

    init(revisions: [CommittedRevision]) {
        self.revisions = revisions
    }

    /// Makes the frame of all of revision `index`'s changes for watch `watchID`, unless made.
    func makeWhole(_ index: Int, watchID: UInt64) {
        if whole.isEmpty { whole = Array(repeating: nil, count: revisions.count) }
        if let first = whole[index] {
            guard first.watchID != watchID, !others.contains(where: { $0.revision == index && $0.watchID == watchID }) else { return }
            others.append((index, watchID, revisions[index].frame(forWatch: watchID, allocator: WatchFrames.allocator)))
        } else {
            whole[index] = (watchID, revisions[index].frame(forWatch: watchID, allocator: WatchFrames.allocator))
        }
    }

    /// The frame made for a whole revision, if ``makeWhole(_:watchID:)`` made it.
    func wholeFrame(_ index: Int, watchID: UInt64) -> ByteBuffer? {
        guard index < whole.count else { return nil }
        if let first = whole[index], first.watchID == watchID { return first.frame }
        return others.first(where: { $0.revision == index && $0.watchID == watchID })?.frame
    }

    /// The frame of `message` for watch `watchID`: a whole revision's shared one, any other made
    /// now.
    func frame(of message: WatchMessage, watchID: UInt64) -> ByteBuffer {
        if case .changes(let index, nil, false) = message, let made = wholeFrame(index, watchID: watchID) { return made }
        return WatchFrames.frame(of: message, watchID: watchID, revisions: revisions)
    }
}
