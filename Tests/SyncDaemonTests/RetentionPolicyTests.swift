import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

@Suite struct RetentionPolicyTests {
    private let start = ContinuousClock.now

    @Test func keepsTheConfiguredNumberOfRevisionsInSteps() {
        var policy = RetentionPolicy(maxRevisions: 100, maxAge: nil)
        #expect(policy.compactionTarget(revision: 100, compacted: 0, now: start) == nil)
        #expect(policy.compactionTarget(revision: 105, compacted: 0, now: start) == nil)  // less than a tenth over
        #expect(policy.compactionTarget(revision: 110, compacted: 0, now: start) == 10)
        #expect(policy.compactionTarget(revision: 115, compacted: 10, now: start) == nil)
        #expect(policy.compactionTarget(revision: 125, compacted: 10, now: start) == 25)
    }

    @Test func keepsRevisionsYoungerThanTheAge() {
        var policy = RetentionPolicy(maxRevisions: 0, maxAge: .seconds(60))
        #expect(policy.compactionTarget(revision: 10, compacted: 0, now: start) == nil)
        #expect(policy.compactionTarget(revision: 50, compacted: 0, now: start + .seconds(30)) == nil)
        // At 61 s, revision 10 (seen at 0 s) is older than a minute; 50 (seen at 30 s) is not.
        #expect(policy.compactionTarget(revision: 70, compacted: 0, now: start + .seconds(61)) == 10)
        #expect(policy.compactionTarget(revision: 70, compacted: 10, now: start + .seconds(91)) == 50)
        #expect(policy.compactionTarget(revision: 70, compacted: 50, now: start + .seconds(100)) == nil)
    }

    @Test func theStricterOfCountAndAgeWins() {
        var policy = RetentionPolicy(maxRevisions: 1000, maxAge: .seconds(10))
        _ = policy.compactionTarget(revision: 20, compacted: 0, now: start)
        #expect(policy.compactionTarget(revision: 30, compacted: 0, now: start + .seconds(11)) == 20)
        #expect(policy.compactionTarget(revision: 2_000, compacted: 20, now: start + .seconds(12)) == 1_000)
    }
}
