import NIOCore
import Synchronization

/// The frames a connection's callers send, gathered while its event loop is busy: however many
/// tasks send at once, the loop is handed one task that writes everything queued and flushes it
/// with one system call, instead of one task, one wake-up and one flush per frame.
final class OutboundQueue: Sendable {
    private let channel: any Channel
    /// The frames not yet handed to the channel, and whether a task to hand them over is queued.
    private let pending = Mutex<(frames: [ByteBuffer], isScheduled: Bool)>(([], false))

    init(channel: any Channel) {
        self.channel = channel
    }

    /// Queues a frame; frames leave in the order they were queued.
    func send(_ frame: ByteBuffer) {
        let mustSchedule = pending.withLock { pending in
            pending.frames.append(frame)
            defer { pending.isScheduled = true }
            return !pending.isScheduled
        }
        guard mustSchedule else { return }
        channel.eventLoop.execute { [self] in
            let frames = pending.withLock { pending in
                pending.isScheduled = false
                defer { pending.frames.removeAll(keepingCapacity: true) }
                return pending.frames
            }
            for frame in frames {
                channel.write(frame, promise: nil)
            }
            channel.flush()
        }
    }
}
