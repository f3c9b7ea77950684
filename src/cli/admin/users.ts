import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { commandGroup } from "../command-group.js"
import { adminSession, printJson, sessionOptions, usage } from "./session.js"

/** A user id as the gateway makes them (a UUID): checked before anything is sent. */
const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const REVISION = /^(0|[1-9][0-9]{0,15})$/
const LIMIT = /^[1-9][0-9]{0,3}$/

const idArg = Args.text({ name: "id" }).pipe(Args.withDescription("The local account's id, as list prints it"))
const ifMatchOption = Options.text("if-match").pipe(
  Options.withDescription("The revision it has now, as list or show print it")
)
const checkedId = (id: string) => (ID.test(id) ? Effect.succeed(id) : usage(`${id}: not a user id`))
const checkedRevision = (revision: string) =>
  REVISION.test(revision) ? Effect.succeed(revision) : usage("--if-match: expected the revision read, e.g. 3")

/** `gateway admin users list [--limit n] [--cursor c]`: one page of local accounts. */
const listCommand = Command.make(
  "list",
  {
    ...sessionOptions,
    limit: Options.text("limit").pipe(Options.withDescription("Accounts per page, 1 to 1000"), Options.optional),
    cursor: Options.text("cursor").pipe(Options.withDescription("The previous page's next_cursor"), Options.optional)
  },
  (options) =>
    Effect.gen(function* () {
      const query = new URLSearchParams()
      if (Option.isSome(options.limit)) {
        if (!LIMIT.test(options.limit.value)) return yield* usage("--limit: expected an integer from 1 to 1000")
        query.set("limit", options.limit.value)
      }
      if (Option.isSome(options.cursor)) query.set("cursor", options.cursor.value)
      const api = yield* adminSession(options)
      const suffix = query.size === 0 ? "" : `?${query}`
      printJson(yield* api.call({ method: "GET", path: `/api/v1/local-accounts${suffix}` }))
    })
).pipe(Command.withDescription("Local accounts, one page (GET /api/v1/local-accounts)"))

const showCommand = Command.make("show", { ...sessionOptions, id: idArg }, (options) =>
  Effect.gen(function* () {
    const id = yield* checkedId(options.id)
    const api = yield* adminSession(options)
    printJson(yield* api.call({ method: "GET", path: `/api/v1/local-accounts/${id}` }))
  })
).pipe(Command.withDescription("One local account (GET /api/v1/local-accounts/{id})"))

/** `gateway admin users create <username> --display-name <name>`: prints the account and its enrolment link (once). */
const createCommand = Command.make(
  "create",
  {
    ...sessionOptions,
    username: Args.text({ name: "username" }).pipe(Args.withDescription("The sign-in name")),
    displayName: Options.text("display-name").pipe(Options.withDescription("The name people see"))
  },
  (options) =>
    Effect.gen(function* () {
      const api = yield* adminSession(options)
      printJson(
        yield* api.call({
          method: "POST",
          path: "/api/v1/local-accounts",
          body: { username: options.username, display_name: options.displayName }
        })
      )
    })
).pipe(
  Command.withDescription(
    "Create a local account waiting for enrolment; prints its one-time enrolment link (POST /api/v1/local-accounts)"
  )
)

/** An action on one account with `--if-match`: disable, enable, reset-password, reset-mfa. */
const actionCommand = (action: string, description: string) =>
  Command.make(action, { ...sessionOptions, id: idArg, ifMatch: ifMatchOption }, (options) =>
    Effect.gen(function* () {
      const id = yield* checkedId(options.id)
      const ifMatch = yield* checkedRevision(options.ifMatch)
      const api = yield* adminSession(options)
      printJson(yield* api.call({ method: "POST", path: `/api/v1/local-accounts/${id}/${action}`, ifMatch }))
    })
  ).pipe(Command.withDescription(description))

/** `gateway admin users …`: local accounts people are given (docs/local-accounts.md). */
export const usersCommand = commandGroup(
  "users",
  "Local accounts: list, show, create, disable, enable, reset-password, reset-mfa",
  [
    listCommand,
    showCommand,
    createCommand,
    actionCommand("disable", "Disable a local account: its sessions end, its enrolment link dies"),
    actionCommand("enable", "Enable a local account again"),
    actionCommand(
      "reset-password",
      "Remove the password and authenticator, end the sessions; prints a new enrolment link"
    ),
    actionCommand("reset-mfa", "Remove the authenticator and password, end the sessions; prints a new enrolment link")
  ]
)
