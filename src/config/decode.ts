import { Either, Schema } from "effect"
import { issueProblems } from "./issues.js"
import { GatewayConfig } from "./schema.js"
import type { ConfigProblem } from "./service.js"

/** Unknown keys are errors, never ignored: a typo such as `lisen` must not silently fall back to a default. */
const options = { errors: "all", onExcessProperty: "error" } as const

export type Decoded =
  | { readonly _tag: "Valid"; readonly config: GatewayConfig }
  | {
      readonly _tag: "Invalid"
      readonly problems: ReadonlyArray<ConfigProblem>
      /** The top-level sections that decoded on their own, so the rules over them can still run. */
      readonly sections: Partial<GatewayConfig>
    }

const sectionNames = Object.keys(GatewayConfig.fields) as ReadonlyArray<keyof typeof GatewayConfig.fields>

const decodeSections = (raw: unknown): Partial<GatewayConfig> => {
  const sections: Partial<GatewayConfig> = {}
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return sections
  const record = raw as Record<string, unknown>
  for (const name of sectionNames) {
    const one = Schema.decodeUnknownEither(
      GatewayConfig.pick(name),
      options
    )(name in record ? { [name]: record[name] } : {})
    if (Either.isRight(one)) Object.assign(sections, one.right)
  }
  return sections
}

export const decodeConfig = (raw: unknown, fromEnv: ReadonlyMap<string, ReadonlyArray<string>>): Decoded => {
  const result = Schema.decodeUnknownEither(GatewayConfig, options)(raw)
  if (Either.isRight(result)) return { _tag: "Valid", config: result.right }
  return { _tag: "Invalid", problems: issueProblems(result.left.issue, fromEnv), sections: decodeSections(raw) }
}
