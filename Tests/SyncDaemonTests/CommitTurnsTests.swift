import Testing

@testable import SyncEngine

/// The hand-off between the event loops and the writer thread (``CommitTurns``), driven as
/// values through every interleaving of two loops, the writer, the clock and a shutdown up to a
/// depth: one commit at a time, and never a writer asleep past something it has to do.
@Suite struct CommitTurnsTests {
    /// The machine with the two loops, the writer and a store whose maintenance comes due a
    /// little after a commit, as ``WriteQueue`` and the engine drive it.
    struct World {
        enum Writer: Equatable {
            case running
            case waiting(until: ContinuousClock.Instant)
            case committing
            case stopped
        }

        enum Event: CaseIterable {
            case submitOnFirstLoop, finishOnFirstLoop, submitOnSecondLoop, finishOnSecondLoop, writerRuns, timePasses, shutdown
        }

        static let start = ContinuousClock.now
        static let maintenanceDelay = Duration.milliseconds(50)
        static let syncDelay = Duration.milliseconds(20)

        var turns = CommitTurns<Int>()
        var now = start
        var maintenanceDeadline: ContinuousClock.Instant?
        var syncDeadline: ContinuousClock.Instant?
        var syncs = 0
        var loopCommits = [false, false]
        var writer = Writer.running
        var isWakePending = false
        var submitted = 0
        var committed: [Int] = []
        var maintenances = 0

        mutating func storeCommitted() {
            if maintenanceDeadline == nil { maintenanceDeadline = now + Self.maintenanceDelay }
            if syncDeadline == nil { syncDeadline = now + Self.syncDelay }
        }

        mutating func wake(_ shouldWake: Bool) {
            if shouldWake { isWakePending = true }
        }

        /// Applies `event`; false when it cannot happen now.
        mutating func apply(_ event: Event) -> Bool {
            switch event {
            case .submitOnFirstLoop: return submit(on: 0)
            case .submitOnSecondLoop: return submit(on: 1)
            case .finishOnFirstLoop: return finish(on: 0)
            case .finishOnSecondLoop: return finish(on: 1)
            case .timePasses:
                now += .milliseconds(30)
                return true
            case .shutdown:
                guard !turns.isClosed else { return false }
                wake(turns.close())
                return true
            case .writerRuns:
                return writerRuns()
            }
        }

        mutating func submit(on loop: Int) -> Bool {
            guard !loopCommits[loop], !turns.isClosed else { return false }
            submitted += 1
            if turns.reserveIfIdle() {
                loopCommits[loop] = true
                committed.append(submitted)
                storeCommitted()
            } else {
                let action = turns.enqueue([submitted])
                #expect(action != .refused)
                wake(action == .queuedWakingWriter)
            }
            return true
        }

        mutating func finish(on loop: Int) -> Bool {
            guard loopCommits[loop] else { return false }
            loopCommits[loop] = false
            wake(turns.finishCommit(maintenanceDeadline: maintenanceDeadline, syncDeadline: syncDeadline))
            return true
        }

        mutating func writerRuns() -> Bool {
            switch writer {
            case .stopped:
                return false
            case .waiting(let until):
                guard isWakePending || now >= until else { return false }
                isWakePending = false
                writer = .running
                return true
            case .committing:
                // The engine's writer: maintenance that came due during its commit goes next.
                if let deadline = maintenanceDeadline, deadline <= now { maintain() }
                writer = .running
                _ = turns.finishCommit(maintenanceDeadline: maintenanceDeadline, syncDeadline: syncDeadline)
                return true
            case .running:
                switch turns.nextForWriter(now: now, maintenanceDeadline: maintenanceDeadline, syncDeadline: syncDeadline, limit: 2) {
                case .commit(let batch):
                    writer = .committing
                    committed += batch
                    storeCommitted()
                case .maintain:
                    writer = .committing
                    maintain()
                case .sync:
                    // No turn: the writer stays running, a loop may be committing meanwhile.
                    // Due, or before due maintenance.
                    let isDue = syncDeadline.map { $0 <= now || maintenanceDeadline.map { $0 <= now } == true } == true
                    #expect(isDue, "a sync before it was due")
                    syncs += 1
                    syncDeadline = nil
                case .wait(let until):
                    #expect(until <= now + CommitTurns<Int>.longestWait, "a wait without a bound")
                    writer = .waiting(until: until)
                case .stop:
                    writer = .stopped
                }
                return true
            }
        }

        mutating func maintain() {
            maintenances += 1
            maintenanceDeadline = nil
        }

        var committers: Int { loopCommits.filter { $0 }.count + (writer == .committing ? 1 : 0) }

        /// What must hold between any two events.
        func checkInvariants(after events: [Event]) {
            #expect(committers <= 1, "two commits at once after \(events)")
            #expect(turns.isCommitting == (committers == 1), "the turn and the committers disagree after \(events)")
            // A writer asleep with nobody to wake it must have nothing to do before it wakes.
            guard case .waiting(let until) = writer, !isWakePending, committers == 0 else { return }
            #expect(turns.queued.isEmpty, "writes queued for a writer nobody wakes, after \(events)")
            if let deadline = maintenanceDeadline {
                #expect(until <= deadline, "the writer sleeps past its maintenance, after \(events)")
            }
            if let deadline = syncDeadline {
                #expect(until <= deadline, "the writer sleeps past its sync, after \(events)")
            }
        }

        /// Shuts down and lets everyone finish; the writer must stop with every write committed.
        mutating func drain(after events: [Event]) {
            if !turns.isClosed { _ = apply(.shutdown) }
            _ = finish(on: 0)
            _ = finish(on: 1)
            var steps = 0
            while writer != .stopped, steps < 100 {
                if !writerRuns() {
                    guard case .waiting(let until) = writer else { break }
                    now = max(now, until)
                }
                checkInvariants(after: events)
                steps += 1
            }
            #expect(writer == .stopped, "the writer did not stop after \(events)")
            #expect(committed.sorted() == (0..<submitted).map { $0 + 1 }, "writes lost or doubled after \(events)")
        }
    }

    @Test func noInterleavingCommitsTwiceAtOnceOrLeavesTheWriterAsleepPastItsWork() {
        var explored = 0
        func explore(_ world: World, _ events: [World.Event], depth: Int) {
            explored += 1
            var drained = world
            drained.drain(after: events)
            guard depth > 0 else { return }
            for event in World.Event.allCases {
                var next = world
                guard next.apply(event) else { continue }
                let path = events + [event]
                next.checkInvariants(after: path)
                explore(next, path, depth: depth - 1)
            }
        }
        explore(World(), [], depth: 7)
        #expect(explored > 10_000)
    }

    @Test func aLoopThatAlwaysHasWritesCannotStarveTheWritersMaintenance() {
        var world = World()
        // The writer waits for work; the first loop commits back to back, time passing.
        let step1 = world.apply(.writerRuns)
        #expect(step1)
        var maintainedAt: Int?
        for round in 0..<20 {
            _ = world.apply(.submitOnFirstLoop)
            _ = world.apply(.timePasses)
            _ = world.apply(.finishOnFirstLoop)
            while world.apply(.writerRuns) {}
            world.checkInvariants(after: [])
            if world.maintenances > 0 {
                maintainedAt = round
                break
            }
        }
        // Due 50 ms after the first commit, each round 30 ms: done within a round of coming due.
        #expect(maintainedAt.map { $0 <= 3 } == true, "maintained at round \(String(describing: maintainedAt))")
        #expect(world.committed.count == world.submitted)
    }

    @Test func dueMaintenanceIsPrecededByOneSyncAndThenGoesBeforeASyncThatIsAlwaysDue() {
        var turns = CommitTurns<Int>()
        let now = ContinuousClock.now
        // Maintenance due, and a sync that is always due (a disk slower than the interval).
        guard case .sync = turns.nextForWriter(now: now, maintenanceDeadline: now, syncDeadline: now, limit: 8) else {
            Issue.record("due maintenance was not preceded by a sync")
            return
        }
        #expect(turns.hasSyncedForMaintenance && !turns.isCommitting)
        guard case .maintain = turns.nextForWriter(now: now, maintenanceDeadline: now, syncDeadline: now, limit: 8) else {
            Issue.record("a sync that is always due kept the maintenance waiting")
            return
        }
        #expect(turns.isCommitting && !turns.hasSyncedForMaintenance)
        _ = turns.finishCommit(maintenanceDeadline: now + .seconds(1), syncDeadline: now)
        // A sync still due now runs as usual.
        guard case .sync = turns.nextForWriter(now: now, maintenanceDeadline: now + .seconds(1), syncDeadline: now, limit: 8) else {
            Issue.record("the sync did not run after the maintenance")
            return
        }
    }

    @Test func whileALoopCommitsTheSyncBeforeMaintenanceRunsAndThenTheWriterWantsTheTurn() {
        var turns = CommitTurns<Int>()
        let now = ContinuousClock.now
        let reserved = turns.reserveIfIdle()
        #expect(reserved)
        guard case .sync = turns.nextForWriter(now: now, maintenanceDeadline: now, syncDeadline: now + .milliseconds(5), limit: 8) else {
            Issue.record("the sync before maintenance waited for the turn")
            return
        }
        // An ordinary sync due meanwhile still runs, and the writer wants the turn: no loop
        // reserves another commit.
        guard case .sync = turns.nextForWriter(now: now, maintenanceDeadline: now, syncDeadline: now, limit: 8) else {
            Issue.record("a due sync waited for the turn")
            return
        }
        #expect(turns.writerWantsTurn)
        let again = turns.reserveIfIdle()
        #expect(!again)
    }

    @Test func maintenanceDoneAfterAWritersCommitClearsItsSync() {
        var turns = CommitTurns<Int>()
        let now = ContinuousClock.now
        guard case .sync = turns.nextForWriter(now: now, maintenanceDeadline: now, syncDeadline: now + .milliseconds(5), limit: 8) else {
            Issue.record("due maintenance was not preceded by a sync")
            return
        }
        // The engine's writer did the maintenance right after a commit: it is no longer due.
        _ = turns.nextForWriter(now: now, maintenanceDeadline: now + .seconds(1), syncDeadline: now + .milliseconds(5), limit: 8)
        #expect(!turns.hasSyncedForMaintenance)
    }

    @Test func aSyncDueWhileALoopCommitsRunsWithoutWaitingForTheTurn() {
        var turns = CommitTurns<Int>()
        let now = ContinuousClock.now
        let reserved = turns.reserveIfIdle()
        #expect(reserved)
        guard case .sync = turns.nextForWriter(now: now, maintenanceDeadline: nil, syncDeadline: now, limit: 8) else {
            Issue.record("the writer waited for the turn to sync")
            return
        }
        #expect(turns.isCommitting && !turns.writerWantsTurn)
    }

    @Test func theWriterWakesForMaintenanceThatALoopsCommitMadeDue() {
        var turns = CommitTurns<Int>()
        let now = ContinuousClock.now
        // Nothing to do: the writer waits, bounded.
        guard case .wait(let until) = turns.nextForWriter(now: now, maintenanceDeadline: nil, limit: 8) else {
            Issue.record("the writer did not wait")
            return
        }
        #expect(until == now + CommitTurns<Int>.longestWait)
        // A loop commits; the store's maintenance is now due sooner than the writer wakes.
        let step2 = turns.reserveIfIdle()
        #expect(step2)
        let step3 = turns.finishCommit(maintenanceDeadline: now + .milliseconds(10))
        #expect(step3)
        // A loop's commit that leaves the deadline where the writer already waits for it wakes nobody.
        guard case .wait(let second) = turns.nextForWriter(now: now, maintenanceDeadline: now + .milliseconds(10), limit: 8) else {
            Issue.record("the writer did not wait")
            return
        }
        #expect(second == now + .milliseconds(10))
        let step4 = turns.reserveIfIdle()
        #expect(step4)
        let step5 = turns.finishCommit(maintenanceDeadline: now + .milliseconds(10))
        #expect(!(step5))
        // The deadline came while a loop committed: the writer wants the turn, loops queue.
        let step6 = turns.reserveIfIdle()
        #expect(step6)
        guard case .wait = turns.nextForWriter(now: now + .milliseconds(20), maintenanceDeadline: now + .milliseconds(10), limit: 8) else {
            Issue.record("the writer did not wait for the turn")
            return
        }
        #expect(turns.writerWantsTurn)
        let step7 = turns.finishCommit(maintenanceDeadline: now + .milliseconds(10))
        #expect(step7)
        let step8 = turns.reserveIfIdle()
        #expect(!(step8))
        let step9 = turns.enqueue([1])
        #expect(step9 == .queuedWakingWriter)
        guard
            case .commit(let batch) = turns.nextForWriter(
                now: now + .milliseconds(21), maintenanceDeadline: now + .milliseconds(10), limit: 8)
        else {
            Issue.record("the writer did not take the queued write")
            return
        }
        #expect(batch == [1])
        #expect(!turns.writerWantsTurn)
    }
}
