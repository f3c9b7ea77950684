/**
 * Preloaded (`node --import`) into the MCP conformance suite's process by test/mcp/conformance.test.ts:
 * adds `Authorization: Bearer $CONFORMANCE_BEARER_TOKEN` to every HTTP request the suite sends to
 * `$CONFORMANCE_BEARER_ORIGIN`. The suite has no option for a token, and sends through two stacks —
 * the MCP client SDK and its raw SSE checks use `fetch`, the DNS-rebinding checks undici's `request` —
 * which share one global dispatcher; this installs one that adds the header, taken from the suite's
 * own undici. Nothing else about the requests changes.
 *
 * Runs as-is on Node 24 (type stripping), so it uses only erasable TypeScript.
 */
import { createRequire } from "node:module"

type Headers = Record<string, string | ReadonlyArray<string> | undefined> | ReadonlyArray<unknown> | null | undefined
interface DispatchOptions {
  readonly origin?: string | URL
  readonly headers?: Headers
}
type Dispatch = (options: DispatchOptions, handler: unknown) => boolean
interface Undici {
  Agent: new () => { compose(interceptor: (dispatch: Dispatch) => Dispatch): unknown }
  setGlobalDispatcher(dispatcher: unknown): void
}

const token = process.env["CONFORMANCE_BEARER_TOKEN"]
const origin = process.env["CONFORMANCE_BEARER_ORIGIN"]
const suite = process.argv[1]
if (token === undefined || origin === undefined || suite === undefined) {
  throw new Error("conformance-bearer: CONFORMANCE_BEARER_TOKEN and CONFORMANCE_BEARER_ORIGIN must be set")
}
const authorization = `Bearer ${token}`

/** The headers with `authorization` added, in whichever of undici's three shapes they came. */
const withBearer = (headers: Headers): Headers => {
  if (headers === null || headers === undefined) return { authorization }
  if (Array.isArray(headers)) {
    // A flat [name, value, ...] list, or a list of [name, value] pairs.
    return headers.length > 0 && Array.isArray(headers[0])
      ? [...headers, ["authorization", authorization]]
      : [...headers, "authorization", authorization]
  }
  const record = headers as Record<string, string | ReadonlyArray<string> | undefined>
  if (typeof (record as unknown as Iterable<unknown>)[Symbol.iterator] === "function") {
    return [...(record as unknown as Iterable<unknown>), ["authorization", authorization]]
  }
  return { ...record, authorization }
}

const undici = createRequire(suite)("undici") as Undici
undici.setGlobalDispatcher(
  new undici.Agent().compose(
    (dispatch) => (options, handler) =>
      dispatch(
        options.origin !== undefined && new URL(String(options.origin)).origin === origin
          ? { ...options, headers: withBearer(options.headers) }
          : options,
        handler
      )
  )
)
