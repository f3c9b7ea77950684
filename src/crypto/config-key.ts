import { randomBytes } from "node:crypto"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname } from "node:path"
import { Context, Data, Effect, Either, Layer, Redacted } from "effect"

/** Bytes of key material `GATEWAY_CONFIG_KEY` must decode to (AES-256 / HKDF-SHA256 input). */
export const CONFIG_KEY_BYTES = 32

export const CONFIG_KEY_HOW_TO =
  "Make one with `openssl rand -base64 32` or " +
  "`node -e \"console.log(require('crypto').randomBytes(32).toString('base64'))\"`"

/** Why a configuration key was refused. The message never contains the key text. */
export class ConfigKeyError extends Data.TaggedError("ConfigKeyError")<{
  readonly message: string
}> {}

/**
 * The deployment's configuration key: every sealed secret in the store depends on it.
 * Held as `Redacted` so inspecting, logging or JSON-encoding the service never shows the bytes.
 */
export class ConfigKey extends Context.Tag("gateway/ConfigKey")<ConfigKey, Redacted.Redacted<Uint8Array>>() {
  static readonly layer = (key: Redacted.Redacted<Uint8Array>): Layer.Layer<ConfigKey> => Layer.succeed(ConfigKey, key)

  /** A layer from the text of `GATEWAY_CONFIG_KEY` (or `undefined` when the variable is unset). */
  static readonly fromText = (text: string | undefined): Layer.Layer<ConfigKey, ConfigKeyError> =>
    Layer.effect(ConfigKey, parseConfigKey(text))
}

// Standard and URL-safe alphabets are both accepted (but not mixed), with or without padding.
const STANDARD = /^[A-Za-z0-9+/]+={0,2}$/
const URL_SAFE = /^[A-Za-z0-9_-]+={0,2}$/

const refuse = (what: string) =>
  Either.left(
    new ConfigKeyError({ message: `${what}. It must be the Base64 of exactly 32 random bytes. ${CONFIG_KEY_HOW_TO}` })
  )

/**
 * Parses the text form of a configuration key: Base64 (standard or URL-safe, padding optional) of 32 bytes.
 * Surrounding whitespace is ignored because key files and secret stores often add a trailing newline.
 */
export const parseConfigKey = (
  text: string | undefined,
  name = "GATEWAY_CONFIG_KEY"
): Either.Either<Redacted.Redacted<Uint8Array>, ConfigKeyError> => {
  const trimmed = text?.trim() ?? ""
  if (trimmed === "") return refuse(`${name} is not set`)
  const isStandard = STANDARD.test(trimmed)
  if (!isStandard && !URL_SAFE.test(trimmed)) {
    return refuse(`${name} is not Base64 (it contains characters outside one Base64 alphabet)`)
  }
  const unpadded = trimmed.replace(/=+$/, "")
  const paddedCorrectly = unpadded.length === trimmed.length || trimmed.length % 4 === 0
  if (unpadded.length % 4 === 1 || !paddedCorrectly) {
    return refuse(`${name} is not Base64 (its length or padding is invalid)`)
  }
  const bytes = new Uint8Array(Buffer.from(unpadded, isStandard ? "base64" : "base64url"))
  if (bytes.length !== CONFIG_KEY_BYTES) {
    bytes.fill(0)
    return refuse(`${name} decodes to ${bytes.length} bytes, not ${CONFIG_KEY_BYTES}`)
  }
  return Either.right(Redacted.make(bytes))
}

export interface DevConfigKey {
  readonly key: Redacted.Redacted<Uint8Array>
  /** True when this call generated the file: the caller should say so once, with its path. */
  readonly created: boolean
}

const errorCode = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : undefined

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const readKeyFile = (path: string) =>
  Effect.try({
    try: () => readFileSync(path, "utf8"),
    catch: (cause) =>
      new ConfigKeyError({ message: `cannot read the development key file ${path}: ${describe(cause)}` })
  }).pipe(
    Effect.flatMap((text) =>
      parseConfigKey(text, `the development key file ${path}`).pipe(
        Either.mapLeft(
          (error) => new ConfigKeyError({ message: `${error.message}. The file was left unchanged; fix or remove it` })
        )
      )
    )
  )

/**
 * Only for `npm start`'s development default: production deployments pass `GATEWAY_CONFIG_KEY`.
 * The file is created exclusively (`wx`) so two starting processes never overwrite each other's key,
 * and an existing file is never rewritten, even when malformed, because the store depends on it.
 */
export const loadDevConfigKey = (path: string): Effect.Effect<DevConfigKey, ConfigKeyError> =>
  Effect.try({
    try: () => {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
      writeFileSync(path, `${randomBytes(CONFIG_KEY_BYTES).toString("base64")}\n`, { flag: "wx", mode: 0o600 })
      return true
    },
    catch: (cause) => cause
  }).pipe(
    Effect.catchAll((cause) =>
      errorCode(cause) === "EEXIST"
        ? Effect.succeed(false)
        : new ConfigKeyError({ message: `cannot create the development key file ${path}: ${describe(cause)}` })
    ),
    Effect.flatMap((created) => Effect.map(readKeyFile(path), (key) => ({ key, created })))
  )

/** The development key file as it is, never created: for `gateway dev-token`, which only reads it. */
export const readDevConfigKey = (path: string): Effect.Effect<Redacted.Redacted<Uint8Array>, ConfigKeyError> =>
  readKeyFile(path)
