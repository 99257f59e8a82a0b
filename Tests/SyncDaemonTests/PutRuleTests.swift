import Foundation
import Synchronization
import TestSupport
import Testing

@testable import SharedStateWire
@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncSQLite

/// syncd's own planner of puts (the engine's, which writes each entry straight into its table)
/// and ``WritePlanner``, which the in-memory double runs, follow one rule of a put
/// (``WritePlanner/put(_:current:ifVersion:revision:)``): the same random writes, in groups, give
/// the same answers and leave the same entries.
@Suite struct PutRuleTests {
    /// An answer as compared: the outcome, or the error's code.
    enum Answer: Equatable {
        case outcome(WriteOutcome)
        case refused(SharedStateError.Code)

        init(_ result: Result<WriteOutcome, SharedStateError>) {
            switch result {
            case .success(let outcome): self = .outcome(outcome)
            case .failure(let error): self = .refused(error.code)
            }
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func theEngineAndWritePlannerAnswerEveryWriteAlike(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let keys = ["a", "b", "c/d", "é"]
        var model: [String: Entry] = [:]
        var revision: UInt64 = 0
        try await withEngine { engine in
            for _ in 0..<40 {
                // A group: submitted back to back, so the writer plans them together against the
                // entries as the earlier writes of the group leave them.
                var requests: [WriteRequest] = []
                var expected: [Answer] = []
                for _ in 0..<Int.random(in: 1...6, using: &random) {
                    let key = keys.randomElement(using: &random)!
                    let version = model[key]?.version ?? 0
                    let choices: [UInt64?] = [nil, 0, version, version + 1, version == 0 ? nil : version - 1]
                    let ifVersion = choices.randomElement(using: &random)!
                    let request: WriteRequest =
                        Int.random(in: 0..<4, using: &random) == 0
                        ? .delete(key: key, ifVersion: ifVersion)
                        : .put(
                            key: key, value: Data("\(Int.random(in: 0..<1000, using: &random))".utf8), ifVersion: ifVersion,
                            ephemeralSession: 0)
                    requests.append(request)
                    // The model: WritePlanner, one request at a time.
                    do throws(SharedStateError) {
                        let plan = try WritePlanner.plan(request, revision: revision + 1) { model[$0] }
                        if !plan.changes.isEmpty { revision += 1 }
                        for change in plan.changes { model[change.key] = change.type == .put ? change.entry : nil }
                        expected.append(.outcome(plan.outcome))
                    } catch {
                        expected.append(.refused(error.code))
                    }
                }
                let answers = Mutex<[Int: Answer]>([:])
                let count = requests.count
                await withCheckedContinuation { (all: CheckedContinuation<Void, Never>) in
                    for (index, request) in requests.enumerated() {
                        engine.submit(request) { result in
                            let done = answers.withLock { answers in
                                answers[index] = Answer(result)
                                return answers.count == count
                            }
                            if done { all.resume() }
                        }
                    }
                }
                let answered = answers.withLock { answers in (0..<count).map { answers[$0] } }
                #expect(answered == expected.map { Optional($0) }, "\(requests)")
            }
            for key in keys {
                #expect(engine.entry(key).entry == model[key], "\(key)")
            }
            #expect(engine.entry("a").revision == revision)
        }
    }
}
