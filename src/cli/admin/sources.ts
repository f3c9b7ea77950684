import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { ProposalStateColumn } from "../../store/source-proposals.js"
import { commandGroup } from "../command-group.js"
import { AdminCommandFailed, AdminExit } from "./failure.js"
import { adminSession, jsonBody, jsonOption, printJson, sessionOptions, usage } from "./session.js"

/** An id as the Management API takes it in a path (docs/tool-sources.md): checked before anything is sent. */
const ID = /^[a-z0-9][a-z0-9_-]{0,62}$/
const REVISION = /^(0|[1-9][0-9]{0,15})$/

const idArg = Args.text({ name: "id" }).pipe(Args.withDescription("The tool source's id"))
const ifMatchOption = Options.text("if-match").pipe(
  Options.withDescription("The revision it has now, as list or show print it")
)

const checkedId = (id: string) => (ID.test(id) ? Effect.succeed(id) : usage(`${id}: not a tool source id`))
const checkedRevision = (revision: string) =>
  REVISION.test(revision) ? Effect.succeed(revision) : usage("--if-match: expected the revision read, e.g. 3")

/** A write's answer: the record, or a proposal waiting for review (its own exit code: not yet in effect). */
const printWritten = (answer: unknown) =>
  Effect.gen(function* () {
    printJson(answer)
    if (typeof answer === "object" && answer !== null && "pending_approval" in answer) {
      return yield* new AdminCommandFailed({
        message: "the change waits for a security reviewer: nothing is in effect yet",
        exitCode: AdminExit.pending
      })
    }
  })

/**
 * `gateway admin <kind> list|show|create|update|delete` for one kind of tool source (docs/management-api.md,
 * "The `gateway admin` commands"): JSON in (`--json`, or `-` for standard input) and out, `--if-match` on
 * update and delete.
 */
const sourceCommand = (name: string, path: string, one: string) => {
  const list = Command.make("list", sessionOptions, (options) =>
    Effect.gen(function* () {
      const api = yield* adminSession(options)
      printJson(yield* api.call({ method: "GET", path }))
    })
  ).pipe(Command.withDescription(`Every ${one} (GET /api/v1/${name})`))

  const show = Command.make("show", { ...sessionOptions, id: idArg }, (options) =>
    Effect.gen(function* () {
      const id = yield* checkedId(options.id)
      const api = yield* adminSession(options)
      printJson(yield* api.call({ method: "GET", path: `${path}/${id}` }))
    })
  ).pipe(Command.withDescription(`One ${one}`))

  const create = Command.make("create", { ...sessionOptions, json: jsonOption }, (options) =>
    Effect.gen(function* () {
      const body = yield* jsonBody(options.json)
      if (body === undefined) return yield* usage("--json: give the definition")
      const api = yield* adminSession(options)
      yield* printWritten(yield* api.call({ method: "POST", path, body }))
    })
  ).pipe(Command.withDescription(`Create a ${one} from --json (exit 7: it waits for review)`))

  const update = Command.make(
    "update",
    { ...sessionOptions, id: idArg, ifMatch: ifMatchOption, json: jsonOption },
    (options) =>
      Effect.gen(function* () {
        const id = yield* checkedId(options.id)
        const ifMatch = yield* checkedRevision(options.ifMatch)
        const body = yield* jsonBody(options.json)
        if (body === undefined) return yield* usage("--json: give the whole definition")
        const api = yield* adminSession(options)
        yield* printWritten(yield* api.call({ method: "PUT", path: `${path}/${id}`, ifMatch, body }))
      })
  ).pipe(Command.withDescription(`Replace a ${one} (--if-match: the revision read; exit 7: it waits for review)`))

  const remove = Command.make("delete", { ...sessionOptions, id: idArg, ifMatch: ifMatchOption }, (options) =>
    Effect.gen(function* () {
      const id = yield* checkedId(options.id)
      const ifMatch = yield* checkedRevision(options.ifMatch)
      const api = yield* adminSession(options)
      yield* api.call({ method: "DELETE", path: `${path}/${id}`, ifMatch })
      printJson({ deleted: id })
    })
  ).pipe(Command.withDescription(`Delete a ${one} (--if-match: the revision read)`))

  return commandGroup(name, `Tool sources: ${one}s`, [list, show, create, update, remove])
}

export const backendsCommand = sourceCommand("backends", "/api/v1/backends", "backend")
export const httpToolsCommand = sourceCommand("http-tools", "/api/v1/http-tools", "HTTP tool")
export const openApiImportsCommand = sourceCommand("openapi-imports", "/api/v1/openapi-imports", "OpenAPI import")
export const toolGroupsCommand = sourceCommand("tool-groups", "/api/v1/tool-groups", "tool group")

/** `gateway admin proposals list [--state <state>]|show <id>`: configuration changes under review. */
export const proposalsCommand = commandGroup("proposals", "Configuration changes under review and decided", [
  Command.make(
    "list",
    {
      ...sessionOptions,
      state: Options.choice("state", ProposalStateColumn.literals).pipe(
        Options.withDescription("Only this state"),
        Options.optional
      )
    },
    (options) =>
      Effect.gen(function* () {
        const api = yield* adminSession(options)
        const query = Option.match(options.state, { onNone: () => "", onSome: (state) => `?state=${state}` })
        printJson(yield* api.call({ method: "GET", path: `/api/v1/proposals${query}` }))
      })
  ).pipe(Command.withDescription("Proposals, newest first")),
  Command.make(
    "show",
    { ...sessionOptions, id: Args.text({ name: "id" }).pipe(Args.withDescription("The proposal's id")) },
    (options) =>
      Effect.gen(function* () {
        if (!/^[0-9a-f-]{36}$/.test(options.id)) return yield* usage(`${options.id}: not a proposal id`)
        const api = yield* adminSession(options)
        printJson(yield* api.call({ method: "GET", path: `/api/v1/proposals/${options.id}` }))
      })
  ).pipe(Command.withDescription("One proposal and its diff against what is active, secrets masked"))
])
