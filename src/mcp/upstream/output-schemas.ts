import type { JsonSchemaType, jsonSchemaValidator } from "@modelcontextprotocol/client"
import { compileSchema, type Dialect } from "../../json-schema.js"

/** `$schema` values by dialect (http and https, trailing `#` stripped), as the SDK's own validator reads them. */
const dialects: ReadonlyArray<readonly [Dialect, ReadonlyArray<string>]> = [
  ["2020-12", ["json-schema.org/draft/2020-12/schema"]],
  ["2019-09", ["json-schema.org/draft/2019-09/schema"]],
  ["draft-07", ["json-schema.org/draft-07/schema", "json-schema.org/draft-06/schema"]]
]

const dialectOf = (schema: JsonSchemaType): Dialect => {
  const declared = (schema as { readonly $schema?: unknown }).$schema
  if (typeof declared !== "string") return "2020-12"
  const bare = declared.replace(/#$/, "").replace(/^https?:\/\//, "")
  const found = dialects.find(([, uris]) => uris.includes(bare))
  if (found === undefined) {
    throw new Error(`the schema declares an unsupported dialect ("$schema": ${JSON.stringify(declared.slice(0, 200))})`)
  }
  return found[0]
}

/**
 * How the MCP client validates a backend's `structuredContent` against the tool's `outputSchema`
 * (tools called through the SDK client: those declaring `Mcp-Param-*` headers): the gateway's own ajv
 * engines (src/json-schema.ts), whose patterns run in linear time, in place of the SDK's default, whose
 * JavaScript patterns a hostile backend could pair with a result that backtracks for hours on the
 * gateway's one event loop. Dialects as the SDK's default reads them (2020-12 when none is declared,
 * 2019-09, draft-07 and draft-06); a schema that does not compile is the SDK's `InvalidParams` for that
 * tool before any call is sent, as with the default.
 */
export const backendOutputValidator: jsonSchemaValidator = {
  getValidator: <T>(schema: JsonSchemaType) => {
    const compiled = compileSchema(schema as Record<string, unknown>, dialectOf(schema))
    if (!compiled.ok) throw new Error(compiled.message)
    const validate = compiled.validate
    return (input: unknown) =>
      validate(input)
        ? { valid: true as const, data: input as T, errorMessage: undefined }
        : {
            valid: false as const,
            data: undefined,
            errorMessage: (validate.errors ?? [])
              .map((each) => `${each.instancePath || "/"} ${each.message ?? "is not valid"}`)
              .join(", ")
          }
  }
}
