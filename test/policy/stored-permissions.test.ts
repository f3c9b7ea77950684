/**
 * Stored permission objects are read back by a check of their shape (src/policy/stored-permissions.ts;
 * docs/decisions.md, "Reading stored permission objects"): the same value the full schema decodes, the
 * defaults filled in, and anything the gateway would not have written — a wrong type, an unknown role —
 * refused, so a hand-edited row fails the read (closed) instead of granting something.
 */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import {
  AccessEntry,
  encodePermissions,
  Permissions,
  PermissionsFromJson,
  ResourceRule
} from "../../src/policy/permissions.js"
import { readStoredPermissions, StoredPermissions } from "../../src/policy/stored-permissions.js"

const written = encodePermissions(
  Schema.decodeUnknownSync(Permissions)({
    roles: ["approver"],
    scopes: ["crm:read"],
    access: [
      {
        endpoint_id: "crm",
        tools: ["search", "update"],
        allow_write_requests: true,
        resource_rules: [{ argument: "/account/region", allowed_values: ["emea", "apac"] }],
        prompts: ["summary"],
        read_resources: true
      },
      { endpoint_id: "docs", tools: [] }
    ]
  })
)

describe("reading a stored permission object", () => {
  it("reads what the gateway wrote exactly as the full schema decodes it", () => {
    expect(readStoredPermissions(written)).toEqual(Schema.decodeUnknownSync(PermissionsFromJson)(written))
    expect(Schema.decodeUnknownSync(StoredPermissions)(written)).toEqual(readStoredPermissions(written))
  })

  it("reads every field the permission object has: a field added to the schema must be read back too", () => {
    const read = readStoredPermissions(written)
    const keys = (value: object) => Object.keys(value).sort()
    expect(keys(read)).toEqual(keys(Permissions.fields))
    expect(keys(read.access[0]!)).toEqual(keys(AccessEntry.fields))
    expect(keys(read.access[0]!.resource_rules[0]!)).toEqual(keys(ResourceRule.fields))
  })

  it("fills in the defaults of fields a row leaves out", () => {
    expect(readStoredPermissions('{"access":[{"endpoint_id":"crm","tools":["search"]}]}')).toEqual({
      roles: [],
      scopes: [],
      access: [
        {
          endpoint_id: "crm",
          tools: ["search"],
          allow_write_requests: false,
          resource_rules: [],
          prompts: [],
          read_resources: false,
          subscribe: false
        }
      ]
    })
  })

  it("refuses a row the gateway would not have written: an unknown role, a wrong type, not an object", () => {
    for (const [text, path] of [
      ['{"roles":["root"]}', "permissions.roles[0]"],
      ['{"roles":"admin"}', "permissions.roles"],
      ['{"access":[{"endpoint_id":"crm","tools":"search"}]}', "permissions.access[0].tools"],
      ['{"access":[{"endpoint_id":"crm","tools":[],"allow_write_requests":"yes"}]}', "allow_write_requests"],
      ['{"access":[{"endpoint_id":"crm","tools":[],"resource_rules":[{"allowed_values":["a"]}]}]}', "argument"],
      ['{"access":[{"tools":[]}]}', "permissions.access[0].endpoint_id"],
      ["[]", "permissions"],
      ["null", "permissions"]
    ] as const) {
      expect(() => readStoredPermissions(text), text).toThrow(path)
      expect(Schema.decodeUnknownEither(StoredPermissions)(text)._tag, text).toBe("Left")
    }
    expect(Schema.decodeUnknownEither(StoredPermissions)("{not json")._tag).toBe("Left")
  })
})
