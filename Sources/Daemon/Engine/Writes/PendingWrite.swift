import SharedStateWire

/// A write on its way to be committed: the request, who made it, and who waits for its result.
package struct PendingWrite: Sendable {
    package var request: WriteRequest
    package var origin: WriteOrigin
    var reply: Reply
    /// When it was submitted, for the few writes whose way to the watchers is timed (see
    /// ``DaemonMetrics/samplesDelivery()``).
    package var timedSince: ContinuousClock.Instant? = nil

    init(request: WriteRequest, origin: WriteOrigin, reply: Reply, timedSince: ContinuousClock.Instant? = nil) {
        self.request = request
        self.origin = origin
        self.reply = reply
        self.timedSince = timedSince
    }

    /// A connection's write, request `requestID` of it, whose answer goes to `target`.
    package init(request: WriteRequest, origin: WriteOrigin, answering requestID: UInt64, to target: any WriteAnswerTarget) {
        self.init(request: request, origin: origin, reply: .answer(requestID: requestID, target: target))
    }

    /// Who gets a write's result.
    enum Reply: Sendable {
        /// A connection, with the other answers of the same commit.
        case answer(requestID: UInt64, target: any WriteAnswerTarget)
        /// A closure, called on the committing thread.
        case callback(@Sendable (Result<WriteOutcome, SharedStateError>) -> Void)
    }

    /// Adds each write's result for a connection to `round`, every answer for one connection
    /// together, in submission order; callbacks are called at once, unless `callingBack` is false
    /// (``callBack(_:with:)`` calls them later).
    static func answer(
        _ writes: [PendingWrite], with results: [Result<WriteOutcome, SharedStateError>], in round: inout DeliveryRound,
        callingBack: Bool = true
    ) {
        // The usual group comes from one connection: its answers need no sorting by target.
        var only: (any WriteAnswerTarget)?
        var isOneTarget = true
        // By index, reading only the reply: a write copied whole retains its request too.
        for index in writes.indices {
            guard case .answer(_, let target) = writes[index].reply else { continue }
            if let only, only !== target {
                isOneTarget = false
                break
            }
            only = target
        }
        if isOneTarget, writes.count == 1, let pending = writes.first, let result = results.first {
            switch pending.reply {
            case .callback(let completion): if callingBack { completion(result) }
            case .answer(let requestID, let target):
                round.add(DeliveryRound.Answers(target: target, answers: .one(WriteAnswer(requestID: requestID, result: result))))
            }
            return
        }
        if isOneTarget {
            var answers: [WriteAnswer] = []
            answers.reserveCapacity(writes.count)
            for index in writes.indices {
                switch writes[index].reply {
                case .callback(let completion): if callingBack { completion(results[index]) }
                case .answer(let requestID, _): answers.append(WriteAnswer(requestID: requestID, result: results[index]))
                }
            }
            if let only { round.add(DeliveryRound.Answers(target: only, answers: .many(answers))) }
            return
        }
        // Each target's answers, in the order the targets first appear. A connection's writes sit
        // together in a group: its answers usually go to the group found last.
        var groups: [(target: any WriteAnswerTarget, answers: [WriteAnswer])] = []
        // Only for a group from many connections, where a search of `groups` would cost more.
        var groupOfTarget: [ObjectIdentifier: Int] = [:]
        var current = 0
        for index in writes.indices {
            let result = results[index]
            switch writes[index].reply {
            case .callback(let completion):
                if callingBack { completion(result) }
            case .answer(let requestID, let target):
                if groups.isEmpty || groups[current].target !== target {
                    if let found = Self.group(of: target, in: groups, indexedBy: groupOfTarget) {
                        current = found
                    } else {
                        // Room for every answer left: grown once rather than doubling.
                        var room: [WriteAnswer] = []
                        room.reserveCapacity(writes.count - index)
                        groups.append((target, room))
                        current = groups.count - 1
                        if groups.count > Self.searchedTargets {
                            if groupOfTarget.isEmpty {
                                for (group, found) in groups.enumerated() { groupOfTarget[ObjectIdentifier(found.target)] = group }
                            } else {
                                groupOfTarget[ObjectIdentifier(target)] = current
                            }
                        }
                    }
                }
                groups[current].answers.append(WriteAnswer(requestID: requestID, result: result))
            }
        }
        for group in groups {
            round.add(DeliveryRound.Answers(target: group.target, answers: .many(group.answers)))
        }
    }

    /// Up to this many targets in a group, a target's answers are found by a search.
    private static let searchedTargets = 16

    private static func group(
        of target: any WriteAnswerTarget, in groups: [(target: any WriteAnswerTarget, answers: [WriteAnswer])],
        indexedBy index: [ObjectIdentifier: Int]
    ) -> Int? {
        if !index.isEmpty { return index[ObjectIdentifier(target)] }
        return groups.firstIndex { $0.target === target }
    }

    /// Calls the callbacks among `writes` with their results, in order.
    static func callBack(_ writes: [PendingWrite], with results: [Result<WriteOutcome, SharedStateError>]) {
        for index in writes.indices {
            if case .callback(let completion) = writes[index].reply { completion(results[index]) }
        }
    }
}
