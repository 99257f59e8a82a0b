import Foundation
import SharedStateWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The user and group databases, read with the reentrant calls: lookups from several threads at
/// once each get their own answer.
@Suite struct UserDatabaseTests {
    @Test func namesUsersGroupsAndHomes() {
        #expect(UserDatabase.userName(of: 0) == "root")
        #expect(UserDatabase.groupName(of: 0) == "root")
        #expect(UserDatabase.homeDirectory(of: 0) == "/root")
        // No such user or group: nil, not a crash or someone else's name.
        #expect(UserDatabase.userName(of: 4_000_000_000) == nil)
        #expect(UserDatabase.groupName(of: 4_000_000_000) == nil)
    }

    @Test func lookupsFromManyThreadsAtOnceEachGetTheirOwnAnswer() async {
        // root and nobody, asked for alternately by eight tasks: a shared buffer would sometimes
        // hand one task the other's name.
        let nobody = UserDatabase.userName(of: 65_534)
        let wrong = await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for lookup in 0..<2_000 {
                        let asksForRoot = (task + lookup) % 2 == 0
                        let name = UserDatabase.userName(of: asksForRoot ? 0 : 65_534)
                        if name != (asksForRoot ? "root" : nobody) { wrong += 1 }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(nobody != nil)
        #expect(wrong == 0)
    }
}
