import Lobby
import SharedState

// Connects to syncd (SYNCD_SOCKET, or the default socket), runs the lobby until SIGTERM or
// Ctrl-C, and removes nothing it did not own: try `syncctl watch lobby/` beside it.
FeatureHost(name: "lobby").main(initialState: Lobby.State(), reducer: { Lobby() }, start: .start)
