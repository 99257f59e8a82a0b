import Foundation
import NIOCore
import NIOEmbedded
import SharedStateWire
import Synchronization
import Testing

@testable import SyncClient

/// The client's handler cuts what it reads into frames itself: frames cut anywhere across reads
/// reach their watches whole and in order, and a frame over the limit ends the connection.
@Suite struct RoutingHandlerTests {
    /// Each frame of `revisions`, an event of watch 1 with one change, in the stream's bytes.
    private func stream(of revisions: ClosedRange<UInt64>, valueBytes: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for revision in revisions {
            let frame = Sharedstate_V1_ServerFrame.with {
                $0.event = .with {
                    $0.watchID = 1
                    $0.kind = .changes
                    $0.revision = revision
                    $0.changes = [
                        .with {
                            $0.entry = .with {
                                $0.key = "door/\(revision)"
                                $0.value = Data(repeating: UInt8(ascii: "1"), count: valueBytes)
                                $0.version = 1
                                $0.createRevision = revision
                                $0.modRevision = revision
                            }
                        }
                    ]
                }
            }
            var buffer = Frame.encode(frame)
            bytes += buffer.readBytes(length: buffer.readableBytes)!
        }
        return bytes
    }

    /// The revisions of the batches a watch got.
    private final class Received: Sendable {
        private let revisions = Mutex<[UInt64]>([])
        let ended = Mutex<SharedStateError?>(nil)
        func append(_ revision: UInt64) { revisions.withLock { $0.append(revision) } }
        var all: [UInt64] { revisions.withLock { $0 } }
    }

    /// A channel with the handler, and the revisions of the batches watch 1 gets.
    private func channel(maxFrameBytes: Int = WireProtocol.maxServerFrameBytes) throws
        -> (EmbeddedChannel, ResponseRouter, Received)
    {
        let router = ResponseRouter()
        let received = Received()
        _ = router.registerWatch(
            id: 1, previousValues: false, onStart: { _ in }, onBatch: { batch in received.append(batch.revision) },
            onEnd: { _ in })
        let channel = EmbeddedChannel(handler: RoutingHandler(router: router, socketPath: "/test", maxFrameBytes: maxFrameBytes))
        return (channel, router, received)
    }

    @Test func framesCutAtEveryOffsetAcrossReadsReachTheirWatchWholeAndInOrder() throws {
        // Three frames, one of them larger than a read, cut in three reads at every pair of offsets.
        let bytes = try stream(of: 1...3, valueBytes: 300)
        for first in stride(from: 0, through: bytes.count, by: 7) {
            for second in stride(from: first, through: bytes.count, by: 53) {
                let (channel, _, received) = try channel()
                for range in [0..<first, first..<second, second..<bytes.count] where !range.isEmpty {
                    try channel.writeInbound(ByteBuffer(bytes: bytes[range]))
                }
                #expect(received.all == [1, 2, 3], "cut at \(first) and \(second)")
                _ = try channel.finish()
            }
        }
    }

    @Test func aFrameOverTheLimitEndsTheConnectionFromItsLengthAlone() throws {
        let (channel, router, received) = try channel(maxFrameBytes: 200)
        let small = try stream(of: 1...1, valueBytes: 10)
        let large = try stream(of: 2...2, valueBytes: 1_000)
        // Only the large frame's length and a few bytes: it is refused before the rest arrives.
        try channel.writeInbound(ByteBuffer(bytes: small + large.prefix(8)))
        #expect(received.all == [1])
        #expect(router.hasEnded)
        #expect(!channel.isActive)
        // The router refuses what comes after, with the reason it ended.
        _ = router.registerWatch(
            id: 2, previousValues: false, onStart: { _ in }, onBatch: { _ in }, onEnd: { error in received.ended.withLock { $0 = error } })
        let error = try #require(received.ended.withLock { $0 })
        #expect(error.code == .tooLarge)
        #expect(error.message.contains("over the limit of 200 bytes"))
    }

    /// An event read by hand (`WatchEventFrame`) makes the batch SwiftProtobuf's reading makes:
    /// previous entries only for a watch that asked for them, and only in the changes of a
    /// revision.
    @Test func anEventReadByHandMakesTheBatchSwiftProtobufsReadingMakes() throws {
        let previous = Sharedstate_V1_Entry.with {
            $0.key = "k"
            $0.value = Data("1".utf8)
            $0.version = 1
        }
        for kind: Sharedstate_V1_EventKind in [.changes, .snapshot, .progress, .resync] {
            let event = Sharedstate_V1_WatchEvent.with {
                $0.watchID = 3
                $0.kind = kind
                $0.revision = 9
                $0.changes = [
                    .with {
                        $0.entry = .with { $0.key = "k" }
                        $0.previous = previous
                    },
                    .with {
                        $0.entry = .with { $0.key = "j" }
                        $0.previousCompacted = true
                    },
                    .with {
                        $0.type = .delete
                        $0.entry = .with { $0.key = "i" }
                    },
                ]
                $0.writerSession = 4
                $0.cause = "why"
            }
            let bytes: [UInt8] = try Sharedstate_V1_ServerFrame.with { $0.event = event }.serializedBytes()
            for previousValues in [false, true] {
                let read = try #require(WatchEventFrame(frame: ByteBuffer(bytes: bytes)))
                #expect(WatchBatch(read, previousValues: previousValues) == WatchBatch(wireValue: event, previousValues: previousValues))
            }
        }
    }
}
