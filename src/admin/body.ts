import { HttpServerRequest } from "@effect/platform"
import { Effect, Either, ParseResult, Schema } from "effect"
import { issueProblems } from "../config/issues.js"
import { bodyText, charsetProblem, notUtf8Description } from "../http/read-body.js"
import { isRecord } from "../json.js"
import { apiError } from "./errors.js"

/** Management API bodies are small JSON documents (permission objects are the largest). */
export const MAX_BODY_BYTES = 1024 * 1024

const strict = { onExcessProperty: "error", errors: "all" } as const

/** At most this many problems are named in one answer; the first ones are the ones to fix. */
const MAX_PROBLEMS = 5

class NulInBody extends Error {}

/**
 * No field takes U+0000, in a value or a key: PostgreSQL cannot store it in text, and nothing a person
 * names or configures needs it. Refused for the whole body, whichever store runs.
 */
const refuseNul = (key: string, value: unknown) => {
  if (key.includes("\u0000") || (typeof value === "string" && value.includes("\u0000"))) throw new NulInBody()
  return value
}

/**
 * The body of a write as one JSON object: media type and size are checked before it is read (a larger
 * body is refused while reading), then it must parse. Answers 415, 413 or 400 naming the problem.
 */
export const readJsonObject = (request: HttpServerRequest.HttpServerRequest, maxBytes: number = MAX_BODY_BYTES) =>
  Effect.gen(function* () {
    const type = (request.headers["content-type"] ?? "").split(";", 1)[0]!.trim().toLowerCase()
    if (type !== "application/json") {
      return yield* apiError(415, "unsupported_media_type", "Send the body as Content-Type: application/json.")
    }
    const charset = charsetProblem(request.headers["content-type"])
    if (charset !== undefined) {
      return yield* apiError(415, "unsupported_media_type", `Send the body as application/json in UTF-8: ${charset}.`)
    }
    const declared = Number(request.headers["content-length"] ?? 0)
    const tooLarge = apiError(413, "payload_too_large", `The body is larger than ${maxBytes} bytes.`)
    if (declared > maxBytes) return yield* tooLarge
    const text = yield* bodyText(maxBytes).pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, request),
      Effect.either
    )
    if (Either.isLeft(text)) {
      return yield* text.left.reason === "too_large"
        ? tooLarge
        : apiError(
            400,
            "invalid_request",
            text.left.reason === "not_utf8" ? notUtf8Description : "The body could not be read."
          )
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text.right, refuseNul)
    } catch (error) {
      if (error instanceof NulInBody) {
        return yield* apiError(
          400,
          "invalid_request",
          "The body holds a NUL character (\\u0000), which no field accepts."
        )
      }
      return yield* apiError(400, "invalid_request", "The body is not valid JSON.")
    }
    if (!isRecord(parsed)) return yield* apiError(400, "invalid_request", "The body must be a JSON object.")
    return parsed
  })

/**
 * `value` decoded with `schema`, strictly: an unknown key, a wrong type, a value out of range or a
 * missing field is a 400 `invalid_request` naming the field (`groups[2]: expected a string, got 3`).
 */
export const decodeBody = <A, I>(schema: Schema.Schema<A, I>, value: unknown) =>
  Effect.gen(function* () {
    const decoded = Schema.decodeUnknownEither(schema, strict)(value)
    if (Either.isRight(decoded)) return decoded.right
    const problems = issueProblems(
      ParseResult.isParseError(decoded.left) ? decoded.left.issue : decoded.left,
      new Map()
    )
    const shown = problems.slice(0, MAX_PROBLEMS).map((problem) => `${problem.path || "body"}: ${problem.message}`)
    const more = problems.length > MAX_PROBLEMS ? ` (and ${problems.length - MAX_PROBLEMS} more)` : ""
    return yield* apiError(400, "invalid_request", `${shown.join("; ")}${more}`)
  })

/**
 * The revision an `If-Match` header names: `"3"`, `3` or `W/"3"`. Missing: 428 (a write must say
 * which revision it read); malformed: 400. Which status a stale one gets is the write's answer (412).
 */
export const ifMatchRevision = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const header = request.headers["if-match"]
    if (header === undefined || header === "") {
      return yield* apiError(
        428,
        "precondition_required",
        'Send If-Match with the revision you read (the record\'s "revision"), so a concurrent change is not overwritten.'
      )
    }
    const match = /^(?:W\/)?"?(0|[1-9][0-9]{0,15})"?$/.exec(header.trim())
    if (match === null) return yield* apiError(400, "invalid_request", 'If-Match: expected a revision such as "3".')
    return Number(match[1])
  })

/**
 * The body of an action that takes no fields: optional, and when sent an empty JSON object (a field is
 * a 400 naming it, so a client that believes it sends options learns they are not read).
 */
export const noFields = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const length = request.headers["content-length"]
    const hasBody = (length !== undefined && length !== "0") || request.headers["transfer-encoding"] !== undefined
    if (!hasBody) return
    const body = yield* readJsonObject(request)
    const unknown = Object.keys(body)[0]
    if (unknown !== undefined) {
      return yield* apiError(400, "invalid_request", `${unknown}: is not a field of this action (it takes none)`)
    }
  })
