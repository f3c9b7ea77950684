import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { commandGroup } from "../command-group.js"
import { adminSession, jsonBody, jsonOption, printJson, sessionOptions, usage } from "./session.js"

/** `gateway admin directory list`: each configured identity connection's directory version. */
const listCommand = Command.make("list", sessionOptions, (options) =>
  Effect.gen(function* () {
    const api = yield* adminSession(options)
    printJson(yield* api.call({ method: "GET", path: "/api/v1/directory" }))
  })
).pipe(Command.withDescription("Each identity connection's directory version (GET /api/v1/directory)"))

/** A version as If-Match takes it: what `list` showed as `revision`. */
const VERSION = /^(0|[1-9][0-9]{0,15})$/

/**
 * `gateway admin directory reset-version <oidc|ldap> --if-match <version> [--to <version> | --json <body>]`
 * (docs/directory.md, "Resetting a provider's version"): lowers the connection's directory version,
 * only while it is still the one read; prints the connection's record.
 */
const resetVersionCommand = Command.make(
  "reset-version",
  {
    ...sessionOptions,
    connection: Args.choice([
      ["oidc", "oidc"],
      ["ldap", "ldap"]
    ]).pipe(Args.withDescription("The identity connection: oidc or ldap")),
    ifMatch: Options.text("if-match").pipe(
      Options.withDescription("The version it has now, as `gateway admin directory list` shows it")
    ),
    to: Options.text("to").pipe(
      Options.withDescription("The version the next push must exceed (default 0: any push applies)"),
      Options.optional
    ),
    json: jsonOption
  },
  (options) =>
    Effect.gen(function* () {
      if (!VERSION.test(options.ifMatch)) return yield* usage("--if-match: expected the version read, e.g. 42")
      const given = yield* jsonBody(options.json)
      if (given !== undefined && Option.isSome(options.to)) return yield* usage("give --to or --json, not both")
      let body: Record<string, unknown> = given ?? {}
      if (Option.isSome(options.to)) {
        if (!VERSION.test(options.to.value)) return yield* usage("--to: expected a version, e.g. 0")
        body = { version: Number(options.to.value) }
      }
      const api = yield* adminSession(options)
      printJson(
        yield* api.call({
          method: "POST",
          path: `/api/v1/directory/${options.connection}/reset-version`,
          ifMatch: options.ifMatch,
          body
        })
      )
    })
).pipe(
  Command.withDescription(
    "Lower a connection's directory version (If-Match: the version read), after a push sent one far too high"
  )
)

/** `gateway admin directory …`: the directory versions of the identity connections. */
export const directoryCommand = commandGroup(
  "directory",
  "Directory snapshots: each connection's version, and resetting it",
  [listCommand, resetVersionCommand]
)
