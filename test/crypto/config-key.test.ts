import { randomBytes } from "node:crypto"
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { inspect } from "node:util"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Redacted } from "effect"
import { ConfigKeyError, loadDevConfigKey, parseConfigKey } from "../../src/crypto/config-key.js"
import { withTempDir } from "../support/databases.js"

const HOW_TO = "openssl rand -base64 32"

const refusal = (text: string | undefined): string => {
  const result = parseConfigKey(text)
  if (Either.isRight(result)) throw new Error("expected the key to be refused")
  expect(result.left).toBeInstanceOf(ConfigKeyError)
  return result.left.message
}

describe("parseConfigKey", () => {
  const bytes = randomBytes(32)

  it("accepts standard and URL-safe Base64, with or without padding and surrounding whitespace", () => {
    for (const text of [
      bytes.toString("base64"),
      bytes.toString("base64").replace(/=+$/, ""),
      bytes.toString("base64url"),
      `${bytes.toString("base64url")}=`,
      `  ${bytes.toString("base64")}\n`
    ]) {
      const key = Either.getOrThrow(parseConfigKey(text))
      expect(Buffer.from(Redacted.value(key))).toEqual(bytes)
    }
  })

  it("says the key is missing and how to make one", () => {
    for (const text of [undefined, "", "  \n"]) {
      const message = refusal(text)
      expect(message).toContain("GATEWAY_CONFIG_KEY is not set")
      expect(message).toContain(HOW_TO)
      expect(message).toContain("randomBytes(32)")
    }
  })

  it("says the key is not Base64 without echoing it", () => {
    const text = "this is not a key at all!!"
    const message = refusal(text)
    expect(message).toContain("is not Base64")
    expect(message).toContain(HOW_TO)
    expect(message).not.toContain(text)
    expect(refusal("abcde")).toContain("is not Base64")
    expect(refusal("ab+_cdef")).toContain("is not Base64")
  })

  it("says how many bytes a wrong-length key has without echoing it", () => {
    const short = randomBytes(16).toString("base64")
    const message = refusal(short)
    expect(message).toContain("decodes to 16 bytes, not 32")
    expect(message).toContain(HOW_TO)
    expect(message).not.toContain(short)
    expect(refusal(randomBytes(64).toString("base64"))).toContain("decodes to 64 bytes")
  })

  it("never shows the key bytes when printed", () => {
    const key = Either.getOrThrow(parseConfigKey(bytes.toString("base64")))
    const shown = [String(key), JSON.stringify(key), inspect(key, { depth: 5 }), JSON.stringify({ key })].join(" ")
    expect(shown).not.toContain(String(bytes[0]) + "," + String(bytes[1]))
    expect(shown).not.toContain(bytes.toString("base64"))
    expect(shown).toContain("<redacted>")
  })
})

describe("loadDevConfigKey", () => {
  it.scoped("creates a 0600 key file in a 0700 directory once, then reuses it", () =>
    Effect.gen(function* () {
      const path = join(yield* withTempDir, "data", "dev-config.key")
      const first = yield* loadDevConfigKey(path)
      expect(first.created).toBe(true)
      expect(statSync(path).mode & 0o777).toBe(0o600)
      expect(statSync(join(path, "..")).mode & 0o777).toBe(0o700)
      expect(Either.isRight(parseConfigKey(readFileSync(path, "utf8")))).toBe(true)
      const second = yield* loadDevConfigKey(path)
      expect(second.created).toBe(false)
      expect(Redacted.value(second.key)).toEqual(Redacted.value(first.key))
    })
  )

  it.scoped("refuses a malformed key file and leaves it unchanged", () =>
    Effect.gen(function* () {
      const dir = yield* withTempDir
      mkdirSync(join(dir, "data"))
      const path = join(dir, "data", "dev-config.key")
      writeFileSync(path, "short\n")
      const error = yield* Effect.flip(loadDevConfigKey(path))
      expect(error.message).toContain(path)
      expect(error.message).toContain("is not Base64")
      expect(error.message).toContain("left unchanged")
      expect(readFileSync(path, "utf8")).toBe("short\n")
    })
  )
})
