/**
 * The pure parts of write approvals: the intent's canonical JSON and hash (src/approvals/intent.ts),
 * the caller's operation id and the key that binds it to one requester and tool, and the policy one
 * call gets from its rule and risk rules (src/approvals/policy.ts), which fails closed on doubt.
 */
import { createHash } from "node:crypto"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import {
  canonicalJson,
  type Intent,
  intentHash,
  intentText,
  operationIdOf,
  operationKey
} from "../../src/approvals/intent.js"
import { effectivePolicy } from "../../src/approvals/policy.js"
import { ApprovalPolicy } from "../../src/config/schema.js"

const policyOf = (input: Schema.Schema.Encoded<typeof ApprovalPolicy>) =>
  Schema.decodeUnknownSync(ApprovalPolicy)(input)
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

describe("canonicalJson", () => {
  it("sorts object keys at every level, so two spellings of the same arguments are one text", () => {
    const one = { b: 1, a: { d: [{ z: 1, y: 2 }], c: null } }
    const other = { a: { c: null, d: [{ y: 2, z: 1 }] }, b: 1 }
    expect(canonicalJson(one)).toBe('{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}')
    expect(canonicalJson(other)).toBe(canonicalJson(one))
  })

  it("keeps array order, value types and numbers", () => {
    expect(canonicalJson([3, 1, 2])).toBe("[3,1,2]")
    expect(canonicalJson([3, 1, 2])).not.toBe(canonicalJson([1, 2, 3]))
    const spellings = [
      { v: 1 },
      { v: "1" },
      { v: true },
      { v: "true" },
      { v: null },
      { v: "null" },
      { v: [1] },
      { v: { 0: 1 } }
    ]
    expect(new Set(spellings.map(canonicalJson)).size).toBe(spellings.length)
    expect(canonicalJson({ n: 1.5, e: 1e21, z: -0, big: 2 ** 64 })).toBe(
      '{"big":18446744073709552000,"e":1e+21,"n":1.5,"z":0}'
    )
    expect(canonicalJson({})).toBe("{}")
    expect(canonicalJson([])).toBe("[]")
    expect(canonicalJson("text")).toBe('"text"')
  })

  it("orders keys by code unit, whatever their insertion order (numeric-like, upper case, unicode)", () => {
    const value = { é: 5, b: 3, 10: 1, B: 4, 9: 2, "": 0 }
    expect(canonicalJson(value)).toBe('{"":0,"10":1,"9":2,"B":4,"b":3,"é":5}')
  })

  it("escapes keys and strings as JSON does and round-trips to the same value", () => {
    const value = { 'a"b': "line\nbreak", "tab\tkey": "\u0000\u001f", emoji: "🚀", quote: '"', backslash: "\\" }
    const text = canonicalJson(value)
    expect(JSON.parse(text)).toEqual(value)
    expect(text).not.toContain("\n")
    expect(canonicalJson(JSON.parse(text))).toBe(text)
  })

  it("keeps a `__proto__` member of parsed arguments as data", () => {
    const parsed = JSON.parse('{"b":1,"__proto__":{"admin":true}}') as Record<string, unknown>
    expect(canonicalJson(parsed)).toBe('{"__proto__":{"admin":true},"b":1}')
    expect(canonicalJson(parsed)).not.toBe(canonicalJson({ b: 1 }))
  })
})

describe("intentHash", () => {
  const intent = (args: Record<string, unknown>, metadata: Partial<Intent["metadata"]> = {}): Intent => ({
    arguments: args,
    metadata: { backend: "ops", tool: "deploy", client_id: "cli", ...metadata }
  })

  it("is the SHA-256 of the canonical text of arguments and metadata", () => {
    const value = intent({ version: "1.0", environment: "staging" })
    expect(intentText(value)).toBe(
      '{"arguments":{"environment":"staging","version":"1.0"},"metadata":{"backend":"ops","client_id":"cli","tool":"deploy"}}'
    )
    expect(intentHash(value)).toBe(sha256(intentText(value)))
    expect(intentHash(value)).toMatch(/^[0-9a-f]{64}$/)
  })

  it("is the same for reordered arguments and differs for any other argument, backend, tool or client", () => {
    const base = intentHash(intent({ version: "1.0", environment: "staging" }))
    expect(intentHash(intent({ environment: "staging", version: "1.0" }))).toBe(base)
    for (const other of [
      intent({ version: "1.1", environment: "staging" }),
      intent({ version: "1.0", environment: "staging", force: true }),
      intent({ version: "1.0" }),
      intent({ version: "1.0", environment: "staging" }, { backend: "billing" }),
      intent({ version: "1.0", environment: "staging" }, { tool: "rollback" }),
      intent({ version: "1.0", environment: "staging" }, { client_id: "other" }),
      intent({ version: "1.0", environment: "staging" }, { client_id: null })
    ]) {
      expect(intentHash(other)).not.toBe(base)
    }
  })
})

describe("operationIdOf", () => {
  it("finds no operation id when the rule names no argument", () => {
    expect(operationIdOf(undefined, { operation_id: "op-1" })).toEqual({ _tag: "None" })
  })

  it("accepts 1 to 128 letters, digits, '.', '_', ':' and '-' at the rule's pointer", () => {
    for (const id of ["a", "op-1", "A.b_c:d-9", "2024-01-01T10:00:00", "a".repeat(128)]) {
      expect(operationIdOf("/operation_id", { operation_id: id })).toEqual({ _tag: "Id", id })
    }
    expect(operationIdOf("/meta/op", { meta: { op: "nested-1" } })).toEqual({ _tag: "Id", id: "nested-1" })
    expect(operationIdOf("/ops/1", { ops: ["first", "second"] })).toEqual({ _tag: "Id", id: "second" })
    expect(operationIdOf("/a~1b", { "a/b": "escaped" })).toEqual({ _tag: "Id", id: "escaped" })
  })

  const badString = { _tag: "Invalid", message: expect.stringContaining("must be 1 to 128 letters") }
  it.each([
    ["129 characters", "a".repeat(129)],
    ["empty", ""],
    ["a path climbing up", "../../etc/passwd"],
    ["a slash", "a/b"],
    ["a backslash", "a\\b"],
    ["accented letters", "opé"],
    ["non-Latin letters", "操作"],
    ["an emoji", "op🚀"],
    ["full-width digits", "１２３"],
    ["a space", "op 1"],
    ["a trailing newline", "op-1\n"],
    ["a NUL", "op\u0000"],
    ["a quote", 'op"1'],
    ["SQL", "1' OR '1'='1"]
  ])("refuses an operation id with %s", (_, id) => {
    expect(operationIdOf("/operation_id", { operation_id: id })).toEqual(badString)
  })

  const needsString = { _tag: "Invalid", message: expect.stringContaining("needs an operation id: a string argument") }
  it.each<[string, Record<string, unknown>, string]>([
    ["missing", { other: "op-1" }, "/operation_id"],
    ["a number", { operation_id: 42 }, "/operation_id"],
    ["null", { operation_id: null }, "/operation_id"],
    ["a boolean", { operation_id: true }, "/operation_id"],
    ["an array", { operation_id: ["op-1"] }, "/operation_id"],
    ["an object", { operation_id: { id: "op-1" } }, "/operation_id"],
    ["under a missing parent", { operation_id: "op-1" }, "/meta/op"],
    ["past the end of an array", { ops: ["op-1"] }, "/ops/1"],
    ["behind a non-canonical index", { ops: ["op-1"] }, "/ops/01"],
    ["on the prototype chain", {}, "/constructor"],
    ["named by a malformed pointer", { operation_id: "op-1" }, "/operation_id~2"],
    ["named without a leading slash", { operation_id: "op-1" }, "operation_id"]
  ])("refuses an operation id that is %s", (_, args, pointer) => {
    expect(operationIdOf(pointer, args)).toEqual(needsString)
  })
})

describe("operationKey", () => {
  const parts = {
    issuer: "https://gw.example.com/sso",
    subject: "alice",
    backend: "ops",
    tool: "deploy",
    operationId: "op-1"
  }

  it("is a stable SHA-256 hex digest", () => {
    expect(operationKey(parts)).toMatch(/^[0-9a-f]{64}$/)
    expect(operationKey({ ...parts })).toBe(operationKey(parts))
  })

  it("isolates the operation id by issuer, subject, backend and tool", () => {
    const keys = [
      operationKey(parts),
      operationKey({ ...parts, issuer: "https://other.example.com" }),
      operationKey({ ...parts, subject: "bob" }),
      operationKey({ ...parts, backend: "billing" }),
      operationKey({ ...parts, tool: "rollback" }),
      operationKey({ ...parts, operationId: "op-2" })
    ]
    expect(new Set(keys).size).toBe(keys.length)
  })

  it("cannot be forged by moving text between the parts", () => {
    const shifted = [
      { ...parts, subject: "alice\u0000ops", backend: "" },
      { ...parts, subject: "alice", backend: "\u0000ops" },
      { ...parts, subject: 'alice","ops', backend: "" },
      { ...parts, subject: "alic", backend: "eops" },
      { ...parts, tool: "deploy\u0000op-1", operationId: "" },
      { ...parts, issuer: `${parts.issuer}\u0000alice`, subject: "" }
    ]
    const keys = new Set([operationKey(parts), ...shifted.map(operationKey)])
    expect(keys.size).toBe(shifted.length + 1)
  })
})

describe("effectivePolicy", () => {
  const policy = policyOf({
    required_approvals: 1,
    approvers: [{ subjects: ["alice", "bob"] }, { subjects: ["bob", "carol"] }],
    risk_rules: [
      { resources: [{ argument: "/environment", allowed_values: ["production"] }], required_approvals: 2 },
      {
        resources: [
          { argument: "/environment", allowed_values: ["production", "staging"] },
          { argument: "/target/region", allowed_values: ["eu"] }
        ],
        require_step_up: true
      }
    ]
  })
  const approvers = ["alice", "bob", "carol"]

  it("is the rule's base when no risk rule holds; approvers are merged without repeats", () => {
    expect(effectivePolicy(policy, { environment: "dev", target: { region: "us" } })).toEqual({
      requiredApprovals: 1,
      requireStepUp: false,
      approvers,
      risk: "base"
    })
    // Values are compared exactly.
    expect(effectivePolicy(policy, { environment: "Production", target: { region: "EU" } }).risk).toBe("base")
  })

  it("a risk rule whose conditions hold raises the quorum or requires step-up", () => {
    expect(effectivePolicy(policy, { environment: "production", target: { region: "us" } })).toEqual({
      requiredApprovals: 2,
      requireStepUp: false,
      approvers,
      risk: "raised by risk rule 0"
    })
    expect(effectivePolicy(policy, { environment: "staging", target: { region: "eu" } })).toEqual({
      requiredApprovals: 1,
      requireStepUp: true,
      approvers,
      risk: "raised by risk rule 1"
    })
    expect(effectivePolicy(policy, { environment: "production", target: { region: "eu" } })).toEqual({
      requiredApprovals: 2,
      requireStepUp: true,
      approvers,
      risk: "raised by risk rule 0, 1"
    })
  })

  it("a risk rule applies only when all of its conditions hold", () => {
    expect(effectivePolicy(policy, { environment: "staging", target: { region: "us" } }).risk).toBe("base")
    expect(effectivePolicy(policy, { environment: "dev", target: { region: "eu" } }).risk).toBe("base")
  })

  it("never lowers the base: a risk rule asking for less changes nothing", () => {
    const strict = policyOf({
      required_approvals: 2,
      require_step_up: true,
      risk_rules: [
        {
          resources: [{ argument: "/environment", allowed_values: ["dev"] }],
          required_approvals: 1,
          require_step_up: false
        }
      ]
    })
    expect(effectivePolicy(strict, { environment: "dev" })).toEqual({
      requiredApprovals: 2,
      requireStepUp: true,
      approvers: [],
      risk: "raised by risk rule 0"
    })
  })

  const strongest = (reason: string) => ({
    requiredApprovals: 2,
    requireStepUp: true,
    approvers,
    risk: `failed closed: ${reason}`
  })
  it.each<[string, Record<string, unknown>, string]>([
    ["missing", { target: { region: "eu" } }, "/environment is missing"],
    ["empty", { environment: "", target: { region: "eu" } }, "/environment is empty"],
    ["a number", { environment: 1, target: { region: "eu" } }, "/environment is not a string"],
    ["null", { environment: null, target: { region: "eu" } }, "/environment is not a string"],
    ["a boolean", { environment: true, target: { region: "eu" } }, "/environment is not a string"],
    ["an array holding an allowed value", { environment: ["production"] }, "/environment is not a string"],
    ["an object", { environment: { name: "production" } }, "/environment is not a string"],
    ["missing under its parent", { environment: "production" }, "/target/region is missing"],
    ["missing although another condition already fails", { environment: "dev" }, "/target/region is missing"],
    ["behind a parent that is not an object", { environment: "staging", target: "eu" }, "/target/region is missing"]
  ])(
    "an argument a risk rule needs that is %s fails closed to the strongest policy any rule can ask for",
    (_, args, reason) => {
      expect(effectivePolicy(policy, args)).toEqual(strongest(reason))
    }
  )

  it("the strongest policy combines the highest quorum and step-up of the base and all risk rules", () => {
    const split = policyOf({
      risk_rules: [
        { resources: [{ argument: "/a", allowed_values: ["x"] }], required_approvals: 2 },
        { resources: [{ argument: "/b", allowed_values: ["y"] }], require_step_up: true }
      ]
    })
    // Only rule 1's argument is in doubt, yet the quorum of rule 0 applies too.
    expect(effectivePolicy(split, { a: "other", b: 7 })).toEqual({
      requiredApprovals: 2,
      requireStepUp: true,
      approvers: [],
      risk: "failed closed: /b is not a string"
    })
  })

  it("without risk rules, missing or odd arguments do not matter", () => {
    const plain = policyOf({ required_approvals: 2 })
    expect(effectivePolicy(plain, {})).toEqual({
      requiredApprovals: 2,
      requireStepUp: false,
      approvers: [],
      risk: "base"
    })
  })
})
