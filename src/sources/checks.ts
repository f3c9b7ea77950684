import { Redacted } from "effect"
import { credentialProblems } from "../config/backend-rules.js"
import { toolPatternProblem } from "../config/schema.js"
import type { LoadedConfig } from "../config/service.js"
import { backendProblems } from "./compose.js"
import { kindNames, type ManagedSource, toBackendConfig } from "./definitions.js"
import { checkEndpointHeaders, checkHttpTool } from "./http/check.js"
import type { HttpToolSpec } from "./schema.js"

/**
 * The checks a write of a managed source passes before anything is built (docs/tool-sources.md): each
 * kind's own (HTTP tools' save-time checks, the backend rules of the YAML), and those across sources
 * (a tool group's members exist and are not groups). `after` is every source as the write would leave
 * them. Each problem names its place: `<pointer>: <message>`.
 */
export const writeProblems = (
  loaded: LoadedConfig,
  source: ManagedSource,
  after: ReadonlyArray<ManagedSource>
): ReadonlyArray<string> => [...toolRuleProblems(source), ...kindProblems(loaded, source, after)]

/** The written source's tool rules: every pattern one that can match a tool (`toolPatternProblem`). */
const toolRuleProblems = (source: ManagedSource): ReadonlyArray<string> =>
  source.value.tool_rules.flatMap((rule, ruleIndex) =>
    rule.tools.flatMap((pattern, index) => {
      const problem = toolPatternProblem(pattern)
      return problem === undefined ? [] : [`/tool_rules/${ruleIndex}/tools/${index}: ${problem}`]
    })
  )

const kindProblems = (
  loaded: LoadedConfig,
  source: ManagedSource,
  after: ReadonlyArray<ManagedSource>
): ReadonlyArray<string> => {
  switch (source.kind) {
    case "http_tool":
      return [
        ...headerProblems(source.value.headers),
        ...credentialProblems(source.value.credentials).map((each) => `/credentials/${each.field}: ${each.message}`),
        ...checkHttpTool(source.value, source.value.tool).map(
          (problem) => `/tool${problem.pointer}: ${problem.message}`
        )
      ]
    case "openapi_import":
      return [
        ...headerProblems(source.value.headers),
        ...credentialProblems(source.value.credentials).map((each) => `/credentials/${each.field}: ${each.message}`),
        ...source.value.tools.flatMap((tool, index) =>
          checkHttpTool(source.value, tool).map((problem) => `/tools/${index}${problem.pointer}: ${problem.message}`)
        )
      ]
    case "backend": {
      const backends = after.flatMap((each) =>
        each.kind === "backend" && each.value.enabled ? [toBackendConfig(each.value)] : []
      )
      return backendProblems(loaded, backends)
    }
    case "tool_group":
      return memberProblems(source, after)
  }
}

/** An HTTP endpoint's fixed headers: names and values a request can carry, no framing header (never echoing a value). */
const headerProblems = (headers: Readonly<Record<string, Redacted.Redacted<string>>>) =>
  checkEndpointHeaders(
    Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Redacted.value(value)]))
  ).map((problem) => `${problem.pointer}: ${problem.message}`)

const matches = (pattern: string, name: string) =>
  pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : pattern === name

const memberProblems = (group: ManagedSource & { kind: "tool_group" }, after: ReadonlyArray<ManagedSource>) => {
  const byId = new Map(after.map((each) => [each.id, each]))
  return group.value.members.flatMap((member, index) => {
    const at = `/members/${index}`
    const endpoint = byId.get(member.endpoint)
    if (endpoint === undefined) {
      return [`${at}/endpoint: no backend, HTTP tool or OpenAPI import "${member.endpoint}" exists`]
    }
    if (endpoint.kind === "tool_group")
      return [`${at}/endpoint: "${member.endpoint}" is a tool group; groups do not nest`]
    // A backend's tools are known only once it connects; an HTTP endpoint's are in its definition.
    const tools: ReadonlyArray<HttpToolSpec> | undefined =
      endpoint.kind === "http_tool"
        ? [endpoint.value.tool]
        : endpoint.kind === "openapi_import"
          ? endpoint.value.tools
          : undefined
    if (tools !== undefined && !tools.some((tool) => matches(member.tool, tool.name))) {
      return [`${at}/tool: ${kindNames[endpoint.kind].one} "${member.endpoint}" has no tool "${member.tool}"`]
    }
    return []
  })
}

/** The tool groups that name `id` as a member's endpoint. */
export const groupsUsing = (id: string, sources: ReadonlyArray<ManagedSource>) =>
  sources.flatMap((each) =>
    each.kind === "tool_group" && each.value.members.some((member) => member.endpoint === id) ? [each.id] : []
  )

/** The revisions a tool group depends on: its members' endpoints (0: absent). */
export const dependencies = (source: ManagedSource, revisions: ReadonlyMap<string, number>) =>
  source.kind === "tool_group"
    ? Object.fromEntries(source.value.members.map((member) => [member.endpoint, revisions.get(member.endpoint) ?? 0]))
    : {}
