import { isRecord } from "../../json.js"
import { shortText } from "../echo.js"

/**
 * The parameters of the requests the gateway routes, checked before the MCP SDK sees them: the SDK's
 * own validation answers a wrong type with -32603 and the validation library's whole report. Here an
 * invalid parameter is -32602 with one short sentence naming it (docs/mcp.md, "Errors"). Only shapes
 * are checked; what a name or URI refers to is decided later.
 */
type Problem = string | undefined

const key = (name: string) => shortText(name)

const stringValues = (value: unknown, path: string): Problem => {
  if (!isRecord(value)) return `${path} must be an object`
  for (const [name, each] of Object.entries(value)) {
    if (typeof each !== "string") return `${path}.${key(name)} must be a string`
  }
  return undefined
}

const string = (params: Record<string, unknown>, name: string): Problem =>
  typeof params[name] === "string" ? undefined : `${name} must be a string`

/** A list request's page: its `cursor`, when given, is a string (what `nextCursor` was). */
const page = (params: Record<string, unknown>): Problem =>
  params["cursor"] === undefined || typeof params["cursor"] === "string" ? undefined : "cursor must be a string"

/** Requests whose `params` may be left out altogether. */
const paramsOptional: ReadonlySet<string> = new Set([
  "tools/list",
  "prompts/list",
  "resources/list",
  "resources/templates/list"
])

const checks: Readonly<Record<string, (params: Record<string, unknown>) => Problem>> = {
  "tools/list": page,
  "prompts/list": page,
  "resources/list": page,
  "resources/templates/list": page,
  "tools/call": (params) =>
    string(params, "name") ??
    (params["arguments"] === undefined || isRecord(params["arguments"]) ? undefined : "arguments must be an object"),
  "prompts/get": (params) =>
    string(params, "name") ??
    (params["arguments"] === undefined ? undefined : stringValues(params["arguments"], "arguments")),
  "resources/read": (params) => string(params, "uri"),
  "completion/complete": (params) => {
    const ref = params["ref"]
    if (!isRecord(ref)) return "ref must be an object"
    if (ref["type"] === "ref/prompt") {
      if (typeof ref["name"] !== "string") return "ref.name must be a string"
    } else if (ref["type"] === "ref/resource") {
      if (typeof ref["uri"] !== "string") return "ref.uri must be a string"
    } else return 'ref.type must be "ref/prompt" or "ref/resource"'
    const argument = params["argument"]
    if (!isRecord(argument)) return "argument must be an object"
    if (typeof argument["name"] !== "string") return "argument.name must be a string"
    if (typeof argument["value"] !== "string") return "argument.value must be a string"
    const context = params["context"]
    if (context === undefined) return undefined
    if (!isRecord(context)) return "context must be an object"
    return context["arguments"] === undefined ? undefined : stringValues(context["arguments"], "context.arguments")
  }
}

/** The -32602 message for `message`'s parameters, or undefined when they are well formed (or not checked here). */
export const invalidParams = (message: unknown): string | undefined => {
  if (!isRecord(message) || typeof message["method"] !== "string" || message["id"] === undefined) return undefined
  const check = checks[message["method"]]
  if (check === undefined) return undefined
  const params = message["params"]
  if (params === undefined && paramsOptional.has(message["method"])) return undefined
  const problem = isRecord(params) ? check(params) : "params must be an object"
  return problem === undefined ? undefined : `Invalid params for ${message["method"]}: ${problem}`
}
