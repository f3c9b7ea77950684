// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are YAML text, where ${NAME} is meant literally
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Command } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { afterEach, describe, expect, it, vi } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { validateCommand } from "../../src/cli/validate.js"
import { ConfigInvalid } from "../../src/config/service.js"
import { yamlOf } from "../fixtures/config/base.js"

// `gateway validate` validates the configuration (docs/configuration.md, "Validating a file").

const validate = (file: string) =>
  Command.run(validateCommand, { name: "gateway", version: "test" })(["node", "gateway", "--config", file]).pipe(
    Effect.provide(NodeContext.layer),
    Effect.exit
  )

const inTempFile = <A, E>(text: string, use: (file: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "gateway-validate-"))),
    (dir) =>
      Effect.promise(() => writeFile(join(dir, "gateway.yaml"), text)).pipe(
        Effect.zipRight(use(join(dir, "gateway.yaml")))
      ),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  )

describe("gateway validate", () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it.effect("prints `<file>: OK` and succeeds for a valid file", () =>
    inTempFile(yamlOf(), (file) =>
      Effect.gen(function* () {
        const log = vi.spyOn(console, "log").mockImplementation(() => {})
        const exit = yield* validate(file)
        expect(Exit.isSuccess(exit)).toBe(true)
        expect(log).toHaveBeenCalledWith(`${file}: OK`)
      })
    )
  )

  it.effect("fails with ConfigInvalid, whose message is one `<file>:<line>: <path>: <message>` line per problem", () =>
    inTempFile(
      "server:\n  lisen: x\n  public_url: https://gw.example.com/mcp\n  listen: 0.0.0.0:8080\nauth:\n  issuer: ${ISSUER}\n",
      (file) =>
        Effect.gen(function* () {
          const exit = yield* validate(file)
          const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
          expect(error).toBeInstanceOf(ConfigInvalid)
          expect(error instanceof ConfigInvalid && error.message.split("\n")).toEqual([
            `${file}:2: server.lisen: unknown key "lisen"`,
            `${file}:6: auth.issuer: environment variable ISSUER is not set`
          ])
        })
    )
  )

  it.effect("reports an unreadable path as ConfigInvalid naming it", () =>
    Effect.gen(function* () {
      const exit = yield* validate("/nonexistent/gateway.yaml")
      const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
      expect(error instanceof ConfigInvalid && error.message).toBe(
        "/nonexistent/gateway.yaml: cannot read the configuration file: no such file or directory (ENOENT)"
      )
    })
  )
})
