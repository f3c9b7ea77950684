import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { adminSession, jsonBody, jsonOption, printJson, sessionOptions, usage } from "./session.js"

/**
 * `gateway admin <kind> list|show|create|update|delete` for the four kinds of managed tool sources, and
 * `gateway admin proposals list|show` (docs/tool-sources.md, "From the command line"): the Management
 * API's `/api/v1/<path>` routes, JSON in and out. A create or update that waits for a security reviewer
 * prints the API's 202 answer (`approval_id`, `approval_url`) and exits 7 (src/cli/admin/failure.ts): nothing
 * was applied yet.
 */

/** An id as the API takes it in a path: the endpoint id rule, checked before anything is sent. */
const ID = /^[a-z0-9][a-z0-9_-]{0,62}$/
/** A revision as If-Match takes it: what `show` printed as `revision`. */
const REVISION = /^(0|[1-9][0-9]{0,15})$/

const idArg = Args.text({ name: "id" }).pipe(Args.withDescription("The record's id"))
const ifMatchOption = Options.text("if-match").pipe(
  Options.withDescription("The revision read, as `show` prints it: the change applies only to that revision")
)

const checkedId = (id: string) =>
  ID.test(id)
    ? Effect.succeed(id)
    : usage(`id: expected a lowercase id of letters, digits, _ and -, got ${JSON.stringify(id)}`)
const checkedRevision = (revision: string) =>
  REVISION.test(revision) ? Effect.succeed(revision) : usage("--if-match: expected the revision read, e.g. 3")
const requiredBody = (json: Option.Option<string>) =>
  Effect.flatMap(jsonBody(json), (body) =>
    body === undefined
      ? usage("--json: the definition is required (a JSON object, or - for standard input)")
      : Effect.succeed(body)
  )

/** The five commands of one kind, over `/api/v1/<path>`. */
const kindCommand = (name: string, path: string, what: string) => {
  const base = `/api/v1/${path}`
  const list = Command.make("list", sessionOptions, (options) =>
    Effect.gen(function* () {
      const api = yield* adminSession(options)
      printJson(yield* api.call({ method: "GET", path: base }))
    })
  ).pipe(Command.withDescription(`Every ${what} (GET ${base})`))
  const show = Command.make("show", { ...sessionOptions, id: idArg }, (options) =>
    Effect.gen(function* () {
      const id = yield* checkedId(options.id)
      const api = yield* adminSession(options)
      printJson(yield* api.call({ method: "GET", path: `${base}/${id}` }))
    })
  ).pipe(Command.withDescription(`One ${what}, secrets shown as configured or not (GET ${base}/{id})`))
  const create = Command.make("create", { ...sessionOptions, json: jsonOption }, (options) =>
    Effect.gen(function* () {
      const body = yield* requiredBody(options.json)
      const api = yield* adminSession(options)
      printJson(yield* api.call({ method: "POST", path: base, body }))
    })
  ).pipe(Command.withDescription(`Creates a ${what} from --json (POST ${base}); exit 7 when it waits for review`))
  const update = Command.make(
    "update",
    { ...sessionOptions, id: idArg, ifMatch: ifMatchOption, json: jsonOption },
    (options) =>
      Effect.gen(function* () {
        const id = yield* checkedId(options.id)
        const ifMatch = yield* checkedRevision(options.ifMatch)
        const body = yield* requiredBody(options.json)
        const api = yield* adminSession(options)
        printJson(yield* api.call({ method: "PUT", path: `${base}/${id}`, ifMatch, body }))
      })
  ).pipe(Command.withDescription(`Replaces a ${what}'s definition (PUT ${base}/{id}); exit 7 when it waits for review`))
  const remove = Command.make("delete", { ...sessionOptions, id: idArg, ifMatch: ifMatchOption }, (options) =>
    Effect.gen(function* () {
      const id = yield* checkedId(options.id)
      const ifMatch = yield* checkedRevision(options.ifMatch)
      const api = yield* adminSession(options)
      printJson(yield* api.call({ method: "DELETE", path: `${base}/${id}`, ifMatch }))
    })
  ).pipe(Command.withDescription(`Deletes a ${what} at once (DELETE ${base}/{id})`))
  return Command.make(name).pipe(
    Command.withDescription(`Managed ${what}s: list, show, create, update, delete`),
    Command.withSubcommands([list, show, create, update, remove])
  )
}

/** A proposal id as the API hands it out. */
const PROPOSAL = /^[A-Za-z0-9_-]{1,64}$/
const STATES = ["pending_approval", "applying", "applied", "rejected", "failed", "invalidated", "unknown"] as const

const proposalsCommand = Command.make("proposals").pipe(
  Command.withDescription("Configuration changes waiting for, or decided by, a security reviewer"),
  Command.withSubcommands([
    Command.make(
      "list",
      {
        ...sessionOptions,
        state: Options.choice("state", STATES).pipe(
          Options.withDescription("Only proposals in this state"),
          Options.optional
        )
      },
      (options) =>
        Effect.gen(function* () {
          const api = yield* adminSession(options)
          const query = Option.match(options.state, { onNone: () => "", onSome: (state) => `?state=${state}` })
          printJson(yield* api.call({ method: "GET", path: `/api/v1/proposals${query}` }))
        })
    ).pipe(Command.withDescription("Proposals, newest first (GET /api/v1/proposals)")),
    Command.make("show", { ...sessionOptions, id: Args.text({ name: "id" }) }, (options) =>
      Effect.gen(function* () {
        if (!PROPOSAL.test(options.id)) return yield* usage("id: expected a proposal id as `proposals list` prints it")
        const api = yield* adminSession(options)
        printJson(yield* api.call({ method: "GET", path: `/api/v1/proposals/${options.id}` }))
      })
    ).pipe(Command.withDescription("One proposal with its diff, secrets masked (GET /api/v1/proposals/{id})"))
  ])
)

export const sourceCommands = [
  kindCommand("backends", "backends", "backend"),
  kindCommand("http-tools", "http-tools", "HTTP tool"),
  kindCommand("openapi-imports", "openapi-imports", "OpenAPI import"),
  kindCommand("tool-groups", "tool-groups", "tool group"),
  proposalsCommand
] as const
