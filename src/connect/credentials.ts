import { createHash, randomBytes } from "node:crypto"
import {
  chmodSync,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  writeFileSync
} from "node:fs"
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

/** The refresh token the file holds now, whoever it belongs to (undefined when there is none or it is unreadable). */
export const storedRefreshToken = (file: string): string | undefined => {
  try {
    const parsed = decode(readFileSync(file, "utf8"))
    return Either.isRight(parsed) ? parsed.right.refresh_token : undefined
  } catch {
    return undefined
  }
}

/** A lock file older than this was left by a bridge that stopped while renewing, and is taken over. */
export const LOCK_STALE_MS = 30_000
/** How long a renewal waits for another bridge's before giving up (longer than a lock can stay fresh). */
const LOCK_WAIT_MS = 40_000

/**
 * Runs `work` while holding `<file>.lock`, so that bridges sharing one credentials file renew one at a
 * time (docs/clients.md, "Where the bridge keeps its sign-in"): two renewals with the same refresh token
 * would make the gateway revoke the session. The lock file is created exclusively (O_EXCL); a bridge that
 * finds it waits, polling, for at most 40 s; a lock older than {@link LOCK_STALE_MS} (its holder
 * stopped) is taken over. The lock is removed afterwards only if it is still this holder's.
 */
export const withCredentialsLock = async <A>(file: string, work: () => Promise<A>): Promise<A> => {
  const lock = `${file}.lock`
  const mine = `${process.pid} ${randomBytes(9).toString("hex")}\n`
  const deadline = Date.now() + LOCK_WAIT_MS
  for (let attempt = 0; !tryLock(lock, mine); attempt++) {
    if (Date.now() >= deadline) {
      throw new CredentialsError({
        message: `another gateway connect has been renewing the sign-in for over ${LOCK_WAIT_MS / 1000} s (${lock})`
      })
    }
    if (takeOverStale(lock)) continue
    await new Promise((done) => setTimeout(done, Math.min(25 * 2 ** attempt, 250) * (0.5 + Math.random())))
  }
  try {
    return await work()
  } finally {
    try {
      if (readFileSync(lock, "utf8") === mine) rmSync(lock, { force: true })
    } catch {
      // Taken over meanwhile, or already gone: not ours to remove.
    }
  }
}

/** Creates the lock file if there is none: true when this call made it. */
const tryLock = (lock: string, content: string): boolean => {
  try {
    mkdirSync(dirname(lock), { recursive: true, mode: 0o700 })
    writeFileSync(lock, content, { flag: "wx", mode: 0o600 })
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false
    throw new CredentialsError({
      message: `cannot lock ${lock}: ${error instanceof Error ? error.message : String(error)}`
    })
  }
}

/**
 * Removes a stale lock; true when the lock is gone (try again at once). It is first moved aside, which
 * only one waiting bridge can do; if what was moved turns out to be a fresh lock (replaced since it was
 * looked at), it is put back.
 */
const takeOverStale = (lock: string): boolean => {
  let seen: Stats
  try {
    seen = statSync(lock)
  } catch {
    return true
  }
  if (Date.now() - seen.mtimeMs < LOCK_STALE_MS) return false
  const aside = `${lock}.${randomBytes(6).toString("hex")}.stale`
  try {
    renameSync(lock, aside)
  } catch {
    return true
  }
  try {
    if (statSync(aside).ino !== seen.ino) linkSync(aside, lock)
  } catch {
    // Another bridge holds a newer lock already: it is the one that counts.
  }
  rmSync(aside, { force: true })
  return true
}
