import { X509Certificate } from "node:crypto"
import { readFileSync } from "node:fs"
import { request } from "node:https"
import { resolve } from "node:path"
import { Data, Effect } from "effect"
import type * as jose from "jose"

/** Key sets are a few KiB; the cap keeps a wrong URL (a page, a dump) from eating memory. */
const maxJwksBytes = 1024 * 1024

export class JwksFetchFailed extends Data.TaggedError("JwksFetchFailed")<{
  /** Safe to log: never contains key material or credentials. */
  readonly reason: string
}> {}

export class CaBundleInvalid extends Data.TaggedError("CaBundleInvalid")<{
  /** The configuration key naming the file (`auth.external.ca_file`, `auth.sso.upstream.ca_file`). */
  readonly key: string
  readonly file: string
  readonly reason: string
}> {
  override get message() {
    return `${this.key} ${this.file}: ${this.reason}`
  }
}

const pemBlocks = (text: string) => text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []

/**
 * `auth.external.ca_file`: the PEM certificates the JWKS fetch trusts instead of the system roots (a
 * private issuer). Read and checked once when the verifier is built, so a wrong path stops the start
 * with a message rather than showing up as an unreachable key set.
 */
export const readCaBundle = (file: string, key = "auth.external.ca_file"): Effect.Effect<string, CaBundleInvalid> =>
  Effect.try({
    try: () => readFileSync(resolve(file), "utf8"),
    catch: (error) =>
      new CaBundleInvalid({ key, file, reason: `cannot be read (${error instanceof Error ? error.message : error})` })
  }).pipe(
    Effect.flatMap((text) => {
      const blocks = pemBlocks(text)
      if (blocks.length === 0)
        return Effect.fail(new CaBundleInvalid({ key, file, reason: "holds no PEM certificate" }))
      return Effect.try({
        try: () => {
          for (const block of blocks) new X509Certificate(block)
          return blocks.join("\n")
        },
        catch: () => new CaBundleInvalid({ key, file, reason: "holds a certificate that cannot be parsed" })
      })
    })
  )

const isKeySet = (value: unknown): value is jose.JSONWebKeySet =>
  typeof value === "object" && value !== null && Array.isArray((value as { readonly keys?: unknown }).keys)

export interface JwksFetchOptions {
  /** PEM trust anchors replacing the system roots; undefined: Node's default trust. */
  readonly ca: string | undefined
  readonly timeoutMs: number
  readonly signal: AbortSignal
}

/**
 * One GET of the external issuer's key set over HTTPS (the configuration never allows plain http here).
 * Certificate and host name are always verified; redirects are not followed; the whole exchange,
 * connection included, is bounded by `timeoutMs` and by `signal`.
 */
export const fetchJwks = (url: string, options: JwksFetchOptions): Promise<jose.JSONWebKeySet> =>
  new Promise((done, fail) => {
    const signal = AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)])
    const failWith = (reason: string) => fail(new JwksFetchFailed({ reason }))
    if (signal.aborted) return failWith("cancelled")
    const outgoing = request(
      url,
      {
        method: "GET",
        headers: { accept: "application/jwk-set+json, application/json" },
        signal,
        // Explicit: NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment must not turn verification off.
        rejectUnauthorized: true,
        ...(options.ca === undefined ? {} : { ca: options.ca })
      },
      (incoming) => {
        if (incoming.statusCode !== 200) {
          incoming.resume()
          return failWith(`HTTP ${incoming.statusCode}`)
        }
        const chunks: Array<Buffer> = []
        let size = 0
        incoming.on("data", (chunk: Buffer) => {
          size += chunk.length
          if (size > maxJwksBytes) outgoing.destroy(new Error(`larger than ${maxJwksBytes} bytes`))
          else chunks.push(chunk)
        })
        incoming.once("end", () => {
          let parsed: unknown
          try {
            parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"))
          } catch {
            return failWith("the answer is not JSON")
          }
          if (isKeySet(parsed)) done(parsed)
          else failWith('the answer is not a JWK set (no "keys" array)')
        })
        incoming.once("error", (error) => failWith(error.message))
      }
    )
    outgoing.once("error", (error) =>
      failWith(signal.aborted ? (options.signal.aborted ? "cancelled" : "timed out") : error.message)
    )
    outgoing.end()
  })
