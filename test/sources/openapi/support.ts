import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { Effect, Either } from "effect"
import {
  importOpenApi,
  type OpenApiImported,
  type OpenApiInput,
  type OpenApiInvalid
} from "../../../src/sources/openapi/import.js"

export const fixture = (name: string): string =>
  readFileSync(resolve(import.meta.dirname, "../../fixtures/openapi", name), "utf8")

export const imported = (input: OpenApiInput): Promise<OpenApiImported> => Effect.runPromise(importOpenApi(input))

/** The refusal of an import that must fail. */
export const refused = async (input: OpenApiInput): Promise<OpenApiInvalid> => {
  const outcome = await Effect.runPromise(Effect.either(importOpenApi(input)))
  if (Either.isRight(outcome)) throw new Error(`expected a refusal, got ${outcome.right.tools.length} tools`)
  return outcome.left
}

/** A minimal valid OpenAPI 3.0 document with the given paths (and components, when given). */
export const document30 = (paths: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  openapi: "3.0.3",
  info: { title: "test", version: "1" },
  servers: [{ url: "https://api.example.test/v1" }],
  paths,
  ...extra
})

export const ok = { "200": { description: "ok" } }
