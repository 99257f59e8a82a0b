import Testing

@testable import FeatureStore

/// What started an effect, as code inside it (the shared-state client's causes) sees it.
@MainActor
@Suite struct EffectOriginTests {
    /// Records the origin its effects see.
    struct Recorder: Reducer {
        struct State: Equatable { var seen: [String] = [] }

        enum Action: Equatable, Sendable {
            case start(note: String)
            case seen(String)
        }

        func reduce(into state: inout State, action: Action) -> Effect<Action> {
            switch action {
            case .start:
                return .run { send in await send(.seen(EffectOrigin.current?.description() ?? "none")) }
            case .seen(let origin):
                state.seen.append(origin)
                return .none
            }
        }
    }

    @Test func anEffectKnowsTheFeatureAndTheActionThatStartedIt() async {
        let store = TestStore(initialState: Recorder.State()) { Recorder() }
        await store.send(.start(note: "r7"))
        await store.receive(.seen(#"Recorder: start(note: "r7")"#)) { $0.seen = [#"Recorder: start(note: "r7")"#] }
        await store.finish()
        #expect(EffectOrigin.current == nil)
    }

    enum Child: Sendable {
        case setLocked(Bool)
        case loaded(Result<String, TestFailure>)
    }

    enum Parent: Sendable {
        case path(StackAction<Int, Child>)
        case child(Child)
        case rows(IdentifiedAction<String, Child>)
    }

    struct TestFailure: Error {}

    @Test func aNestedActionIsShownAsThePathOfItsCasesDownToTheLeaf() {
        #expect(
            EffectOrigin(feature: "DoorPanel", action: Parent.path(.element(id: 0, action: .setLocked(true)))).description()
                == "DoorPanel: path.element(id: #0).setLocked(true)")
        #expect(
            EffectOrigin(feature: "DoorPanel", action: Parent.child(.setLocked(false))).description() == "DoorPanel: child.setLocked(false)"
        )
        #expect(
            EffectOrigin(feature: "Rows", action: Parent.rows(.element(id: "hall", action: .loaded(.success("ok"))))).description()
                == #"Rows: rows.element(id: "hall").loaded(…)"#)
        // A long leaf keeps its case; the path before it stays whole.
        let long = EffectOrigin(
            feature: "Rows", action: Parent.path(.element(id: 3, action: .loaded(.success(String(repeating: "x", count: 200))))))
        #expect(long.description() == "Rows: path.element(id: #3).loaded(…)")
    }

    @Test func aLongActionIsShownByItsCaseAndAWrappedFeatureByItsOwnName() {
        let long = EffectOrigin(
            feature: "LoggingReducer<Panel>", action: Recorder.Action.start(note: String(repeating: "é", count: 300)))
        #expect(long.description() == "Panel: start(…)")
        let short = EffectOrigin(feature: "Panel", action: Recorder.Action.start(note: "line\none"))
        #expect(short.description() == #"Panel: start(note: "line\none")"#)
        #expect(
            EffectOrigin(feature: String(repeating: "F", count: 300), action: Recorder.Action.seen("x")).description().utf8.count == 256)
    }
}
