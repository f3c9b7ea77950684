/**
 * `gateway init-admin` with the password read from stdin — `--password-stdin` reads a pipe and
 * refuses a terminal, where the password would be echoed as it is typed.
 */
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readPasswordFrom } from "../../src/cli/init-admin.js"

describe("init-admin --password-stdin", () => {
  it.effect("refuses a terminal before reading anything", () =>
    Effect.gen(function* () {
      const terminal = Object.assign(new PassThrough(), { isTTY: true })
      terminal.end("typed password\n")
      const refused = yield* Effect.flip(readPasswordFrom(terminal))
      expect(refused.message).toContain("reads a pipe, not a terminal")
    })
  )

  it.effect("reads a pipe, without its one trailing line break", () =>
    Effect.gen(function* () {
      const pipe = new PassThrough()
      pipe.end("a long passphrase here\n")
      expect(yield* readPasswordFrom(pipe)).toBe("a long passphrase here")
    })
  )
})
