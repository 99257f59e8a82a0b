import Foundation
import NIOCore
import SharedStateWire
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

@Suite struct CommittedRevisionTests {
    @Test(arguments: [UInt64(1), 127, 128, 300, 1 << 40, .max])
    func aFrameBuiltFromTheEncodedEventEqualsOneEncodedWhole(watchID: UInt64) throws {
        let revision = CommittedRevision(
            revision: 12_345,
            changes: [
                .put(
                    Entry(
                        key: "k/a", value: Data(String(repeating: "x", count: 300).utf8), version: 3, createRevision: 9, modRevision: 12_345
                    )),
                .delete("k/b", revision: 12_345),
            ]
        )
        var built = revision.frame(forWatch: watchID, allocator: ByteBufferAllocator())
        var decoder = FrameDecoder(maxFrameBytes: 1 << 20)
        let payload = try #require(try decoder.decode(buffer: &built))
        #expect(built.readableBytes == 0)
        let frame = try Frame.decode(Sharedstate_V1_ServerFrame.self, from: payload)
        let expected = Sharedstate_V1_ServerFrame.with {
            $0.event = .with {
                $0.watchID = watchID
                $0.kind = .changes
                $0.revision = 12_345
                $0.changes = revision.changes.map(\.wireValue)
            }
        }
        #expect(frame == expected)
    }
}
