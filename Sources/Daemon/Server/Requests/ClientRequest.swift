import SharedStateWire
import SyncEngine

/// One operation a client may ask for, as its connection's ``ClientSession`` serves it.
///
/// Each operation is the protocol's request message (sharedstate.proto) made a `ClientRequest`
/// in a file of its own here, which does all of it: checks the request against the limits,
/// authorizes it against the caller's permissions, runs it, and answers. A new operation is
/// its messages in the .proto, that file, the engine's part if it needs one, a client method and
/// a `syncctl` command; the session's dispatch and syncctl's list of commands are generated
/// (`scripts/generate-request-tables.py`, which `scripts/generate-protos.sh` runs).
package protocol ClientRequest {
    /// Serves the request: answers it at once, queues it (writes), or returns the work to run
    /// off the event loop (``ClientSession/Step/suspend(_:)``).
    ///
    /// - Throws: What is wrong with the request, or what refused it; the session answers with it.
    func serve(in session: ClientSession, as call: ClientSession.Call) throws(SharedStateError) -> ClientSession.Step
}
