import NIOCore
import Testing

@testable import SyncServer

/// A connection's phases, its waiting frames and whether it reads, as a value: no channel.
@Suite struct ConnectionStateMachineTests {
    private static func frame(_ byte: UInt8) -> ByteBuffer { ByteBuffer(bytes: [byte]) }

    @Test func framesReadBeforeAdmissionWaitAndComeOutInOrder() {
        var state = ConnectionStateMachine()
        #expect(state.frameRead(Self.frame(1)) == .wait)
        #expect(state.frameRead(Self.frame(2)) == .wait)
        #expect(!state.submitsWrites)
        #expect(state.nextWaitingFrame() == nil)  // not while admitting
        #expect(state.admitted() == true)
        #expect(state.admitted() == false)  // once
        #expect(state.nextWaitingFrame() == Self.frame(1))
        // A frame read while others still wait queues behind them.
        #expect(state.frameRead(Self.frame(3)) == .wait)
        #expect(state.nextWaitingFrame() == Self.frame(2))
        #expect(state.nextWaitingFrame() == Self.frame(3))
        #expect(state.nextWaitingFrame() == nil)
        #expect(state.frameRead(Self.frame(4)) == .handle(Self.frame(4)))
        #expect(state.submitsWrites)
    }

    @Test func aSuspendedRequestHoldsTheFramesAfterItUntilItIsAnswered() {
        var state = ConnectionStateMachine()
        _ = state.admitted()
        state.suspended()
        #expect(state.phase == .suspended)
        #expect(state.frameRead(Self.frame(1)) == .wait)
        #expect(state.nextWaitingFrame() == nil)
        #expect(state.updateReading(isWritable: true, hasTooManyWritesInFlight: false) == false)
        #expect(state.resumed() == .answerAndServe)
        #expect(state.nextWaitingFrame() == Self.frame(1))
        #expect(state.updateReading(isWritable: true, hasTooManyWritesInFlight: false) == true)
    }

    @Test func drainingDropsWhatWaitsAndStillAnswersTheSuspendedRequest() {
        var state = ConnectionStateMachine()
        _ = state.admitted()
        state.suspended()
        #expect(state.frameRead(Self.frame(1)) == .wait)
        #expect(state.startDraining() == true)
        #expect(state.startDraining() == false)
        #expect(!state.isReading)
        #expect(state.frameRead(Self.frame(2)) == .ignore)
        #expect(state.resumed() == .answer)
        #expect(state.nextWaitingFrame() == nil)
        #expect(state.updateReading(isWritable: true, hasTooManyWritesInFlight: false) == nil)
    }

    @Test func aClosedConnectionIgnoresEverything() {
        var state = ConnectionStateMachine()
        #expect(state.frameRead(Self.frame(1)) == .wait)
        #expect(state.close() == true)
        #expect(state.close() == false)
        #expect(state.admitted() == false)
        #expect(state.frameRead(Self.frame(2)) == .ignore)
        #expect(state.resumed() == .ignore)
        #expect(state.startDraining() == false)
        #expect(state.nextWaitingFrame() == nil)
    }

    @Test(arguments: [(true, false, true), (false, false, false), (true, true, false), (false, true, false)])
    func itReadsOnlyWhileItsOutboundSideKeepsUp(isWritable: Bool, hasTooManyWritesInFlight: Bool, reads: Bool) {
        var state = ConnectionStateMachine()
        _ = state.admitted()
        let change = state.updateReading(isWritable: isWritable, hasTooManyWritesInFlight: hasTooManyWritesInFlight)
        // It starts reading: only a change is reported.
        #expect(change == (reads ? nil : false))
        #expect(state.isReading == reads)
    }
}
