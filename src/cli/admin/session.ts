import { Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { adminResource } from "../../admin/resource.js"
import { loadConfig } from "../../config/load.js"
import { adminClientOption } from "../admin-login.js"
import type { LoginFailed } from "../loopback-login.js"
import { configOption } from "../validate.js"
import { AdminCommandFailed, AdminExit, exitCodeOfStatus } from "./failure.js"
import { adminSignIn } from "./sign-in.js"

/** The environment variable a script sets to a token from `gateway admin-login`, so no browser is needed. */
export const ADMIN_TOKEN_ENV = "GATEWAY_ADMIN_TOKEN"

/** How long one Management API request may take. */
const REQUEST_TIMEOUT_MS = 30_000

/** The options every `gateway admin` command takes. */
export const sessionOptions = { config: configOption, client: adminClientOption }

export interface ApiRequest {
  readonly method: "GET" | "POST" | "PUT" | "DELETE"
  readonly path: string
  readonly ifMatch?: string
  readonly body?: Record<string, unknown>
}

/**
 * The Management API as a `gateway admin` command reaches it: on the admin listener of the
 * configuration file, with `GATEWAY_ADMIN_TOKEN` when set, else with a token from the same browser
 * sign-in as `gateway admin-login` (the address to open on standard error). `call` answers the JSON
 * of a 2xx answer; any other answer fails with the exit code of its status, its error body printed
 * on standard output (JSON out, whatever happened).
 */
export const adminSession = (options: { readonly config: string; readonly client: string }) =>
  Effect.gen(function* () {
    const { config } = yield* loadConfig(options.config, process.env)
    const given = process.env[ADMIN_TOKEN_ENV]?.trim()
    const token =
      given !== undefined && given !== ""
        ? given
        : (yield* adminSignIn(config, options.client).pipe(
            Effect.mapError(
              (error: LoginFailed) =>
                new AdminCommandFailed({
                  message: `sign-in failed: ${error.message}`,
                  exitCode: AdminExit.unauthorized
                })
            )
          )).access_token
    const origin = adminResource(config)

    const call = (request: ApiRequest) =>
      Effect.gen(function* () {
        const answer = yield* Effect.tryPromise({
          try: async () => {
            const response = await fetch(`${origin}${request.path}`, {
              method: request.method,
              redirect: "manual",
              signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
              headers: {
                authorization: `Bearer ${token}`,
                accept: "application/json",
                ...(request.ifMatch === undefined ? {} : { "if-match": `"${request.ifMatch}"` }),
                ...(request.body === undefined ? {} : { "content-type": "application/json" })
              },
              ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) })
            })
            return { status: response.status, text: await response.text() }
          },
          catch: (error) =>
            new AdminCommandFailed({
              message: `the Management API at ${origin} did not answer: ${error instanceof Error ? error.message : String(error)}`,
              exitCode: AdminExit.failed
            })
        })
        let body: unknown
        try {
          body = answer.text === "" ? {} : JSON.parse(answer.text)
        } catch {
          return yield* new AdminCommandFailed({
            message: `the Management API answered ${answer.status} with something other than JSON`,
            exitCode: AdminExit.failed
          })
        }
        if (answer.status >= 200 && answer.status < 300) return body
        printJson(body)
        const error = body as { error?: unknown; error_description?: unknown }
        return yield* new AdminCommandFailed({
          message: `${answer.status} ${String(error.error ?? "error")}: ${String(error.error_description ?? "")}`,
          exitCode: exitCodeOfStatus(answer.status)
        })
      })

    return { call } as const
  })

/** A command's answer: JSON on standard output, indented, never coloured. */
export const printJson = (value: unknown) => {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

/**
 * `--json`: the request's body as a JSON object, given inline or as `-` (read from standard input).
 * Not an object: a usage error, and nothing is sent.
 */
export const jsonOption = Options.text("json").pipe(
  Options.withDescription("The request body as a JSON object, or - to read it from standard input"),
  Options.optional
)

export const jsonBody = (given: Option.Option<string>) =>
  Effect.gen(function* () {
    if (Option.isNone(given)) return undefined
    const text = given.value === "-" ? yield* Effect.promise(readStdin) : given.value
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return yield* usage("--json: not valid JSON")
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return yield* usage("--json: expected a JSON object")
    }
    return parsed as Record<string, unknown>
  })

export const usage = (message: string) => new AdminCommandFailed({ message, exitCode: AdminExit.usage })

const readStdin = async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
}
