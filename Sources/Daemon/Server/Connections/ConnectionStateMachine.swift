import NIOCore

/// What one client connection is doing, as a value: the phase it is in, the frames that wait,
/// and whether it reads. ``ConnectionHandler`` hands it each event and does what it answers; it
/// does no I/O, so its tests run it without a channel.
///
/// A connection is admitted (its credentials read, its place taken), then serves one frame at a
/// time; a request that must wait suspends it, and frames read meanwhile wait until it resumes.
/// At shutdown it drains (reads no more, closes once its writes are answered); a protocol error,
/// a refusal or the peer leaving closes it.
package struct ConnectionStateMachine {
    enum Phase: Equatable {
        /// Waiting for the peer's credentials and the server's admission.
        case admitting
        case serving
        /// A request's work is running off the loop; frames wait.
        case suspended
        /// syncd is shutting down: no more requests, close once the writes are answered.
        case draining
        case closed
    }

    private(set) var phase = Phase.admitting
    /// Frames read while admitting or suspended, in order.
    private var waiting = CircularBuffer<ByteBuffer>()
    /// Whether the channel reads (`autoRead`).
    private(set) var isReading = true

    /// What to do with a frame just read.
    enum ReadAction: Equatable {
        /// Hand it to the session now.
        case handle(ByteBuffer)
        /// Keep it: it waits for admission or for a suspended request.
        case wait
        /// Drop it: the connection takes no more requests.
        case ignore
    }

    mutating func frameRead(_ frame: ByteBuffer) -> ReadAction {
        switch phase {
        case .serving where waiting.isEmpty:
            return .handle(frame)
        case .admitting, .serving, .suspended:
            waiting.append(frame)
            return .wait
        case .draining, .closed:
            return .ignore
        }
    }

    /// The next frame that waited, while the connection serves.
    mutating func nextWaitingFrame() -> ByteBuffer? {
        phase == .serving ? waiting.popFirst() : nil
    }

    /// Whether the writes a read queued go to the engine now (not while admitting, suspended or
    /// closed: a suspension hands them over itself).
    var submitsWrites: Bool { phase == .serving }

    /// The server admitted the connection; false when it was no longer waiting for that.
    mutating func admitted() -> Bool {
        guard phase == .admitting else { return false }
        phase = .serving
        return true
    }

    /// A request's work started off the loop.
    mutating func suspended() {
        if phase == .serving { phase = .suspended }
    }

    /// What to do once a suspended request's work is done.
    enum ResumeAction: Equatable {
        /// Nothing: the connection closed meanwhile.
        case ignore
        /// Answer the request; the connection drains meanwhile, so serve nothing more.
        case answer
        /// Answer the request, then serve the frames that waited.
        case answerAndServe
    }

    mutating func resumed() -> ResumeAction {
        switch phase {
        case .closed: return .ignore
        case .suspended:
            phase = .serving
            return .answerAndServe
        case .admitting, .serving, .draining: return .answer
        }
    }

    /// syncd shuts down; false when the connection is already draining or closed. Reading stops,
    /// and the frames that waited are dropped.
    mutating func startDraining() -> Bool {
        guard phase != .closed, phase != .draining else { return false }
        phase = .draining
        stopReading()
        return true
    }

    /// The connection is to close (a protocol error, a refusal, an eviction); false when it is
    /// closed already. Reading stops, and the frames that waited are dropped.
    mutating func close() -> Bool {
        guard phase != .closed else { return false }
        phase = .closed
        stopReading()
        return true
    }

    /// Whether the connection should read now: while it serves, its outbound side keeps up, and
    /// it has not too many writes waiting for their commit. Returns the new setting when it
    /// changed, for the handler to apply.
    mutating func updateReading(isWritable: Bool, hasTooManyWritesInFlight: Bool) -> Bool? {
        let shouldRead = phase == .serving && isWritable && !hasTooManyWritesInFlight
        guard shouldRead != isReading else { return nil }
        isReading = shouldRead
        return shouldRead
    }

    private mutating func stopReading() {
        isReading = false
        waiting.removeAll()
    }
}
