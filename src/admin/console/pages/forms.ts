import { Effect, type Schema } from "effect"
import type { PolicyRefused } from "../../../policy/refusal.js"
import { decodeBody } from "../../body.js"
import type { ApiFailure } from "../../errors.js"
import { refusalStatus } from "../../identities.js"
import { ConsoleProblem, type ConsoleRequest } from "../route.js"

/**
 * What the console's forms share: reading fields (no control characters, bounded), the
 * revision a form was rendered with, and the Management API's own decoding and refusals answered as
 * console problems (the same checks, the same messages).
 */

const problem = (status: ConsoleProblem["status"], message: string) => new ConsoleProblem({ status, message })

/** Larger fields than any setting needs (PEM bundles are the largest, 64 KiB) are refused whole. */
const MAX_FIELD = 70 * 1024

/** Tab, line feed and carriage return are text; every other control character is refused. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it finds
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/

/**
 * Every field of the form, checked once before any is used: no control character (PostgreSQL cannot
 * store U+0000, and no name or setting needs one), none larger than a setting can be.
 */
export const checkedForm = (request: ConsoleRequest) =>
  Effect.gen(function* () {
    for (const [name, value] of request.form) {
      if (CONTROL.test(name) || name.length > 256) return yield* problem(400, "The form has a malformed field name.")
      if (CONTROL.test(value)) return yield* problem(400, `${name}: must not contain control characters`)
      if (value.length > MAX_FIELD) return yield* problem(413, `${name}: longer than ${MAX_FIELD} characters`)
    }
    return request.form
  })

/** The revision the form was rendered with (its hidden `revision` field): what `If-Match` says in the API. */
export const formRevision = (form: URLSearchParams) =>
  Effect.gen(function* () {
    const values = form.getAll("revision")
    const match = values.length === 1 ? /^(0|[1-9][0-9]{0,15})$/.exec(values[0]!) : null
    if (match === null)
      return yield* problem(400, 'revision: expected the revision the form was rendered with, such as "3"')
    return Number(match[1])
  })

/** A checkbox: present (any value) means checked. */
export const checked = (form: URLSearchParams, name: string) => form.has(name)

/** A multi-line field as its non-empty lines, trimmed. */
export const lines = (text: string | null) =>
  (text ?? "")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "")

/** `value` decoded as the Management API decodes a body: a problem names the field (`access[0].tools[1]: …`). */
export const decodeFields = <A, I>(schema: Schema.Schema<A, I>, value: unknown) =>
  decodeBody(schema, value).pipe(Effect.mapError((failure: ApiFailure) => problem(400, failure.body.error_description)))

/** A policy write's refusal as the page shows it: the API's status and message. */
export const refusalProblem = (refused: PolicyRefused) =>
  problem(refusalStatus[refused.code] as ConsoleProblem["status"], refused.description)

/** A path parameter that cannot name a record (empty, too long, control characters) names none: 404. */
export const recordId = (request: ConsoleRequest, what: string) =>
  Effect.gen(function* () {
    const id = request.params["id"] ?? ""
    if (id === "" || id.length > 128 || CONTROL.test(id)) return yield* problem(404, `No ${what} with that id.`)
    return id
  })

export const notFound = (what: string, id: string) => problem(404, `No ${what} "${id}".`)
