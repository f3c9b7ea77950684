import { createHash, randomBytes } from "node:crypto"
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { dirname, join } from "node:path"
import { Data, Either, Schema } from "effect"

/**
 * What `gateway connect` keeps between runs (docs/clients.md, "Where the bridge keeps its sign-in"):
 * the refresh token of one gateway, bound to that gateway's resource, issuer and client. Never the
 * access token, which lives in memory only. The file is the user's alone (0600 in a 0700 directory),
 * written atomically, and refused when others can read it.
 */
export const StoredCredentials = Schema.Struct({
  version: Schema.Literal(1),
  resource: Schema.String,
  issuer: Schema.String,
  client_id: Schema.String,
  refresh_token: Schema.String.pipe(Schema.minLength(1)),
  saved_at: Schema.String
})
export type StoredCredentials = typeof StoredCredentials.Type

export class CredentialsError extends Data.TaggedError("CredentialsError")<{ readonly message: string }> {}

/** `$XDG_CONFIG_HOME/gateway/connect/<16 hex of SHA-256(resource)>.json` (default `~/.config`). */
export const defaultCredentialsFile = (resource: string, env: Readonly<Record<string, string | undefined>>): string => {
  const base = env["XDG_CONFIG_HOME"] || join(env["HOME"] || homedir(), ".config")
  const name = createHash("sha256").update(resource).digest("hex").slice(0, 16)
  return join(base, "gateway", "connect", `${name}.json`)
}

const decode = Schema.decodeUnknownEither(Schema.parseJson(StoredCredentials))

/**
 * The stored sign-in for exactly this gateway and client, or `undefined` when there is none (or it
 * belongs to another resource, issuer or client, or cannot be read as one: then it is ignored and
 * replaced at the next sign-in). A file others may read is an error, like ssh's private keys.
 */
export const readCredentials = (
  file: string,
  expected: { readonly resource: string; readonly issuer: string; readonly clientId: string }
): StoredCredentials | undefined => {
  let mode: number
  try {
    mode = statSync(file).mode
  } catch {
    return undefined
  }
  if ((mode & 0o077) !== 0) {
    throw new CredentialsError({
      message: `${file} can be read by other users (mode ${(mode & 0o777).toString(8)}); run \`chmod 600 ${file}\` or remove it`
    })
  }
  const parsed = decode(readFileSync(file, "utf8"))
  if (Either.isLeft(parsed)) return undefined
  const stored = parsed.right
  return stored.resource === expected.resource &&
    stored.issuer === expected.issuer &&
    stored.client_id === expected.clientId
    ? stored
    : undefined
}

/** Replaces the file atomically (a temporary file in the same directory, then rename), mode 0600. */
export const writeCredentials = (file: string, credentials: StoredCredentials): void => {
  const directory = dirname(file)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const temporary = join(directory, `.${randomBytes(6).toString("hex")}.tmp`)
  try {
    writeFileSync(temporary, `${JSON.stringify(credentials, null, 2)}\n`, { flag: "wx", mode: 0o600 })
    chmodSync(temporary, 0o600)
    renameSync(temporary, file)
  } catch (error) {
    rmSync(temporary, { force: true })
    throw new CredentialsError({
      message: `cannot save the sign-in to ${file}: ${error instanceof Error ? error.message : String(error)}`
    })
  }
}

export const removeCredentials = (file: string): void => rmSync(file, { force: true })
