/**
 * docs/directory.md, "The snapshot" — what a pushed snapshot may hold: every limit at exactly the
 * limit and one over, privilege fields at each level, undeclared and duplicate ids, wrong types; the
 * first problems named precisely.
 */
import { describe, expect, it } from "vitest"
import {
  checkSnapshot,
  MAX_SNAPSHOT_GROUPS,
  MAX_SNAPSHOT_USERS,
  MAX_USER_MEMBERSHIPS
} from "../../../src/identity/directory/snapshot.js"

const groups = (count: number) =>
  Array.from({ length: count }, (_, index) => ({
    kind: index % 2 === 0 ? "group" : "department",
    id: `g${index}`,
    name: `G ${index}`
  }))

const valid = () => ({
  version: 1,
  groups: [
    { kind: "group", id: "eng", name: "Engineering" },
    { kind: "department", id: "rd", name: "R&D" }
  ],
  users: [{ subject: "alice", name: "Alice", active: true, groups: ["eng"], departments: ["rd"] }]
})

const problemsOf = (body: unknown) => {
  const checked = checkSnapshot(body)
  return checked._tag === "Invalid" ? checked : undefined
}

describe("checking a directory snapshot", () => {
  it("accepts a well-formed snapshot", () => {
    const checked = checkSnapshot(valid())
    expect(checked).toEqual({
      _tag: "Valid",
      snapshot: {
        version: 1,
        groups: valid().groups,
        users: [{ subject: "alice", name: "Alice", active: true, groups: ["eng"], departments: ["rd"] }]
      }
    })
  })

  it("takes exactly 10,000 users, 2,000 groups plus departments and 256 memberships per user; one more of each is refused", () => {
    const atLimit = {
      version: 7,
      groups: groups(MAX_SNAPSHOT_GROUPS),
      users: Array.from({ length: MAX_SNAPSHOT_USERS }, (_, index) => ({
        subject: `u${index}`,
        active: true,
        groups: index === 0 ? Array.from({ length: MAX_USER_MEMBERSHIPS / 2 }, (_, n) => `g${n * 2}`) : [],
        departments: index === 0 ? Array.from({ length: MAX_USER_MEMBERSHIPS / 2 }, (_, n) => `g${n * 2 + 1}`) : []
      }))
    }
    expect(checkSnapshot(atLimit)._tag).toBe("Valid")
    expect(problemsOf({ ...atLimit, groups: groups(MAX_SNAPSHOT_GROUPS + 1) })).toMatchObject({
      reason: "limit_exceeded",
      problems: ["groups: 2001 groups and departments; at most 2000"]
    })
    expect(problemsOf({ ...atLimit, users: [...atLimit.users, { subject: "one-more", active: true }] })).toMatchObject({
      reason: "limit_exceeded",
      problems: ["users: 10001 users; at most 10000"]
    })
    const crowded = { ...atLimit.users[0]!, groups: [...atLimit.users[0]!.groups, "g256"] }
    expect(problemsOf({ ...atLimit, users: [crowded, ...atLimit.users.slice(1)] })).toMatchObject({
      reason: "limit_exceeded",
      problems: ["users[0]: 257 groups and departments; at most 256 per user"]
    })
  })

  it("refuses privilege fields at every level, whatever else is right", () => {
    for (const [body, path] of [
      [{ ...valid(), roles: ["admin"] }, "roles"],
      [{ ...valid(), groups: [{ ...valid().groups[0], permissions: {} }] }, "groups[0].permissions"],
      [{ ...valid(), users: [{ ...valid().users[0], scopes: ["gateway:admin"] }] }, "users[0].scopes"],
      [{ ...valid(), users: [{ ...valid().users[0], managed_locally: true }] }, "users[0].managed_locally"],
      [{ ...valid(), users: [{ ...valid().users[0], extra: { Access: [] } }] }, "users[0].extra.Access"],
      [{ ...valid(), users: [{ ...valid().users[0], enabled: true }] }, "users[0].enabled"]
    ] as const) {
      const refused = problemsOf(body)
      expect([path, refused?.reason]).toEqual([path, "privilege_field"])
      expect(refused?.problems[0]).toContain(`${path}: privilege fields are not accepted`)
    }
  })

  it("names undeclared and duplicate ids, unknown fields and wrong types precisely", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [
        { ...valid(), users: [{ ...valid().users[0], groups: ["ops"] }] },
        'users[0].groups[0]: "ops" is not a declared group'
      ],
      [
        { ...valid(), users: [{ ...valid().users[0], departments: ["eng"] }] },
        'users[0].departments[0]: "eng" is not a declared department'
      ],
      [
        { ...valid(), users: [{ ...valid().users[0], groups: ["eng", "eng"] }] },
        'users[0].groups[1]: "eng" is listed twice'
      ],
      [{ ...valid(), users: [valid().users[0], valid().users[0]] }, 'users[1].subject: "alice" is listed twice'],
      [
        { ...valid(), groups: [...valid().groups, { kind: "group", id: "eng", name: "again" }] },
        'groups[2].id: group "eng" is declared twice'
      ],
      [{ ...valid(), version: 0 }, "version: expected a positive integer"],
      [{ ...valid(), version: 1.5 }, "version: expected a positive integer"],
      [{ ...valid(), version: 2 ** 60 }, "version: expected a positive integer"],
      [{ ...valid(), version: "3" }, "version: expected a positive integer"],
      [{ ...valid(), users: [{ ...valid().users[0], active: "yes" }] }, "users[0].active: expected true or false"],
      [{ ...valid(), users: [{ ...valid().users[0], subject: "" }] }, "users[0].subject: expected a nonempty string"],
      [
        { ...valid(), users: [{ ...valid().users[0], subject: "x".repeat(257) }] },
        "users[0].subject: longer than 256 characters"
      ],
      // Line breaks, terminal escapes and U+0000 (which PostgreSQL cannot store) in no name or id.
      [
        { ...valid(), users: [{ ...valid().users[0], name: "Alice\u0000" }] },
        "users[0].name: holds a control character"
      ],
      [
        { ...valid(), groups: [{ kind: "group", id: "eng", name: "Eng\r\nInjected: 1" }] },
        "groups[0].name: holds a control character"
      ],
      [
        { ...valid(), groups: [{ kind: "team", id: "x", name: "x" }] },
        'groups[0].kind: expected "group" or "department"'
      ],
      [{ ...valid(), colour: "blue" }, "colour: unknown field"],
      [{ ...valid(), users: "alice" }, "users: expected an array"],
      [[], "body: expected a JSON object"]
    ]
    for (const [body, problem] of cases) {
      const refused = problemsOf(body)
      expect([problem, refused?.problems.some((text) => text.startsWith(problem))]).toEqual([problem, true])
    }
  })

  it("names at most ten problems and counts the rest", () => {
    const users = Array.from({ length: 25 }, (_, index) => ({ subject: `u${index}`, active: "no" }))
    const refused = problemsOf({ ...valid(), users })
    expect(refused?.problems).toHaveLength(10)
    expect(refused?.more).toBe(15)
  })
})
