/**
 * URL templates of HTTP tools (src/sources/http/template.ts): no argument value — path traversal,
 * query and fragment delimiters, user info, percent-encoded dots, CR/LF, NUL, unicode, huge numbers,
 * objects — can move a request to another origin or change the path's segments. Table-driven over many
 * hostile values, then a seeded property loop over random strings.
 */
import { describe, expect, it } from "vitest"
import {
  encodeValue,
  expandTemplate,
  maxUrlLength,
  parseTemplate,
  type UrlTemplate
} from "../../../src/sources/http/template.js"

const origin = "https://api.example.test"

const template = (text: string): UrlTemplate => {
  const parsed = parseTemplate(text)
  if (!parsed.ok) throw new Error(`${text}: ${parsed.message}`)
  return parsed.template
}

const hostile: ReadonlyArray<unknown> = [
  "../",
  "../../admin",
  "..",
  ".",
  "...",
  "?",
  "?admin=1",
  "#",
  "#frag",
  "@",
  "@evil.test",
  "user:pass@evil.test",
  "https://evil.test/",
  "//evil.test",
  "\\\\evil.test\\x",
  "%2e%2e",
  "%2E%2E%2F",
  ".%2e",
  "..%2f",
  "%2F",
  "%",
  "%%",
  "%zz",
  "%00",
  "a/b",
  "a/../../b",
  "/",
  "\r\nHost: evil.test",
  "\n",
  "\u0000",
  "\t",
  " ",
  "&x=1",
  "=",
  "+",
  ";jsessionid=1",
  ",",
  "*",
  "'",
  "(",
  "~",
  "[::1]",
  "é",
  "日本語",
  "😀",
  "\u2028",
  "\uFF0E\uFF0E",
  "\u0130",
  "a".repeat(2000),
  1e308,
  -1e-308,
  Number.MAX_SAFE_INTEGER * 1024,
  -0,
  0,
  42,
  true,
  false
]

/** Values the expansion must refuse rather than send: they cannot be a path segment or a URL value. */
const refusedInPath = (value: unknown) =>
  value === "." || value === ".." || (typeof value === "object" && value !== null) || value === ""

/** The path of a URL as its segments (the part before the first '/' dropped). */
const segments = (url: string) => new URL(url).pathname.split("/").slice(1)

const expectSafePath = (value: unknown) => {
  const result = expandTemplate(template(`${origin}/users/{id}/posts{?limit}`), { id: value, limit: value })
  if (refusedInPath(value)) {
    expect(result.ok).toBe(false)
    return
  }
  if (!result.ok) throw new Error(`refused ${JSON.stringify(value)}: ${result.message}`)
  const url = new URL(result.url)
  expect(url.origin).toBe(origin)
  expect(url.username + url.password + url.hash).toBe("")
  const [users, id, posts, ...more] = segments(result.url)
  expect([users, posts, more]).toEqual(["users", "posts", []])
  expect(decodeURIComponent(id!)).toBe(String(value))
  expect([...url.searchParams.keys()]).toEqual(["limit"])
  expect(url.searchParams.get("limit")).toBe(String(value))
  // What the request line carries is exactly what was checked.
  expect(result.target).toBe(`${url.pathname}${url.search}`)
}

describe("URL templates: hostile values", () => {
  it.each(hostile.map((value) => [JSON.stringify(value).slice(0, 40), value]))(
    "a simple {id} path value %s stays one segment of the template's origin, encoded",
    (_, value) => expectSafePath(value)
  )

  it.each(hostile.map((value) => [JSON.stringify(value).slice(0, 40), value]))(
    "a {/name} value %s adds exactly one segment",
    (_, value) => {
      const result = expandTemplate(template(`${origin}/files{/dir,name}`), { dir: "d", name: value })
      if (refusedInPath(value)) return expect(result.ok).toBe(false)
      if (!result.ok) throw new Error(result.message)
      expect(new URL(result.url).origin).toBe(origin)
      const parts = segments(result.url)
      expect(parts).toHaveLength(3)
      expect(decodeURIComponent(parts[2]!)).toBe(String(value))
    }
  )

  it.each(hostile.map((value) => [JSON.stringify(value).slice(0, 40), value]))(
    "a query value %s is one parameter, never a new one",
    (_, value) => {
      const result = expandTemplate(template(`${origin}/search?fixed=1{&q}`), { q: value })
      if (typeof value === "object" && value !== null) return expect(result.ok).toBe(false)
      if (!result.ok) throw new Error(result.message)
      const url = new URL(result.url)
      expect(url.pathname).toBe("/search")
      expect([...url.searchParams.entries()]).toEqual([
        ["fixed", "1"],
        ["q", String(value)]
      ])
    }
  )

  it("a value inside a segment with literals ({id}.json) cannot make a dot segment or a new segment", () => {
    for (const value of hostile) {
      const result = expandTemplate(template(`${origin}/items/{id}.json`), { id: value })
      if (refusedInPath(value) && typeof value === "object") {
        expect(result.ok).toBe(false)
        continue
      }
      if (!result.ok) throw new Error(`${JSON.stringify(value)}: ${result.message}`)
      expect(segments(result.url)).toHaveLength(2)
      expect(decodeURIComponent(segments(result.url)[1]!)).toBe(`${String(value)}.json`)
    }
  })

  it("two values that together spell '..' in one segment are refused", () => {
    const result = expandTemplate(template(`${origin}/x/{a}{b}`), { a: ".", b: "." })
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining("'..'") })
  })

  it("an object, a list in the path, a lone surrogate or an empty path value is refused naming the argument", () => {
    const tpl = template(`${origin}/x/{id}`)
    expect(expandTemplate(tpl, { id: { toString: "evil.test" } })).toMatchObject({
      ok: false,
      message: expect.stringContaining("/id")
    })
    expect(expandTemplate(tpl, { id: ["a", "b"] })).toMatchObject({
      ok: false,
      message: expect.stringContaining("/id")
    })
    expect(expandTemplate(tpl, { id: "\uD800x" })).toMatchObject({
      ok: false,
      message: "argument /id: not well-formed Unicode"
    })
    expect(expandTemplate(tpl, { id: "" })).toMatchObject({ ok: false, message: expect.stringContaining("/id") })
    expect(expandTemplate(tpl, {})).toMatchObject({ ok: false, message: "argument /id: required by the URL" })
  })

  it("refusals in the query name the argument as a JSON Pointer and keep their reason", () => {
    const tpl = template(`${origin}/s{?a%2Fb}`)
    expect(expandTemplate(tpl, { "a/b": "\uDC00" })).toEqual({
      ok: false,
      message: "argument /a~1b: not well-formed Unicode"
    })
    expect(expandTemplate(tpl, { "a/b": { x: 1 } })).toMatchObject({
      ok: false,
      message: expect.stringContaining("argument /a~1b: ")
    })
  })

  it("a value whose URL would pass the 8 KiB limit is refused", () => {
    const result = expandTemplate(template(`${origin}/x/{id}`), { id: "é".repeat(maxUrlLength) })
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining(`${maxUrlLength}`) })
  })

  it("an argument named __proto__ or constructor is not read from the prototype", () => {
    const result = expandTemplate(template(`${origin}/x{/constructor}`), {})
    expect(result).toMatchObject({ ok: true, url: `${origin}/x` })
  })

  it("lists in the query: joined with ',' or, exploded, repeated; each item encoded", () => {
    const joined = expandTemplate(template(`${origin}/s{?tags}`), { tags: ["a,b", "c&d=e"] })
    expect(joined).toMatchObject({ ok: true, target: "/s?tags=a%2Cb,c%26d%3De" })
    const exploded = expandTemplate(template(`${origin}/s{?tags*}`), { tags: ["a", "b#c"] })
    expect(exploded).toMatchObject({ ok: true, target: "/s?tags=a&tags=b%23c" })
    expect(expandTemplate(template(`${origin}/s{?tags}`), { tags: [{ a: 1 }] }).ok).toBe(false)
    expect(expandTemplate(template(`${origin}/s{?tags}`), { tags: [] })).toMatchObject({ ok: true, target: "/s" })
  })

  it("encodes everything but the unreserved characters, as UTF-8", () => {
    expect(encodeValue("AZaz09-._~")).toBe("AZaz09-._~")
    expect(encodeValue("!*'()")).toBe("%21%2A%27%28%29")
    expect(encodeValue("é/ ?#[]@")).toBe("%C3%A9%2F%20%3F%23%5B%5D%40")
  })
})

/** A small seeded generator (mulberry32): a failing case can be replayed from its seed. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const alphabet = [
  "/",
  ".",
  "..",
  "%",
  "2e",
  "2f",
  "?",
  "#",
  "@",
  ":",
  "&",
  "=",
  "+",
  "\\",
  "\r",
  "\n",
  "\u0000",
  " ",
  "a",
  "Z",
  "9",
  "~",
  "[",
  "]",
  "é",
  "😀",
  "\uD800",
  "\uDC00",
  "\u2028",
  "%2e",
  "%2F"
]

const randomString = (next: () => number) => {
  const length = Math.floor(next() * 12)
  let text = ""
  for (let index = 0; index < length; index++) {
    text +=
      next() < 0.7
        ? alphabet[Math.floor(next() * alphabet.length)]
        : String.fromCodePoint(Math.floor(next() * 0x10ffff) & ~0x800 /* some surrogates slip through */)
  }
  return text
}

describe("URL templates: a property loop over random strings", () => {
  it("3000 random values: every accepted URL keeps the origin and the segments, and decodes back to the value", () => {
    const next = random(26)
    let accepted = 0
    for (let round = 0; round < 3000; round++) {
      const value = randomString(next)
      const result = expandTemplate(template(`${origin}/users/{id}/posts{?limit}`), { id: value, limit: value })
      if (!result.ok) {
        // Only what cannot be a path segment is refused.
        const wellFormed = !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value)
        expect(
          value === "" || value === "." || value === ".." || !wellFormed,
          `${JSON.stringify(value)} refused: ${result.message}`
        ).toBe(true)
        continue
      }
      accepted++
      const url = new URL(result.url)
      expect(url.origin).toBe(origin)
      const parts = segments(result.url)
      expect(parts).toHaveLength(3)
      expect(decodeURIComponent(parts[1]!)).toBe(value)
      expect(url.searchParams.get("limit")).toBe(value)
      expect([...url.searchParams.keys()]).toEqual(["limit"])
    }
    expect(accepted).toBeGreaterThan(2000)
  })
})
