import Foundation
import Testing

@testable import SyncDaemon
@testable import SyncEngine
@testable import SyncEtcd
@testable import SyncSQLite
@testable import SyncServer

/// The file in which an etcd-backed syncd records its sessions' leases for the next syncd to revoke.
@Suite struct LeaseLedgerTests {
    @Test func recordsExactlyTheLeasesItIsGiven() throws {
        let directory = try TemporaryDirectory()
        let ledger = LeaseLedger(databasePath: directory.file("state.db"))
        #expect(ledger.path == directory.file("state.db.etcd-leases"))
        #expect(try ledger.read() == [])

        try ledger.write([7_587_894_120_331_862_017, 42])
        #expect(try ledger.read() == [42, 7_587_894_120_331_862_017])
        try ledger.write([42])
        #expect(try ledger.read() == [42])
        try ledger.write([])
        #expect(try ledger.read() == [])
    }

    @Test func aLineThatIsNotALeaseIdIsNamed() throws {
        let directory = try TemporaryDirectory()
        let ledger = LeaseLedger(databasePath: directory.file("state.db"))
        try "42\nforty-three\n".write(toFile: ledger.path, atomically: true, encoding: .utf8)
        #expect {
            try ledger.read()
        } throws: { error in
            "\(error)" == "\(ledger.path), line 2: \"forty-three\" is not an etcd lease id"
        }
    }
}
