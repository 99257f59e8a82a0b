import ArgumentParser

struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Set, show, list and remove the JSON Schemas that values under a key prefix must satisfy.",
        discussion: """
            The longest prefix with a schema governs a key: every put there, and every put inside a \
            transaction, is checked against it, and one that breaks it is refused whole with exit \
            code 6 and where the value breaks which rule. Schemas are entries of keys $schemas/PREFIX: \
            watch, back up and restore them as any other.
            """,
        subcommands: [SchemaSetCommand.self, SchemaGetCommand.self, SchemaListCommand.self, SchemaDeleteCommand.self]
    )
}
