/**
 * `gateway connect`'s sign-in and tokens (docs/clients.md) against a real in-process gateway: discovery
 * from the gateway's own metadata, the browser sign-in through the loopback client, the refresh token
 * kept in a file only the user can read, renewal before expiry (a moved clock), one renewal for many
 * concurrent requests, reuse of the stored sign-in by the next run, and a clear answer when the session
 * has been revoked, with a new sign-in already under way.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { loopbackLogin } from "../../src/cli/loopback-login.js"
import { CredentialsError, defaultCredentialsFile } from "../../src/connect/credentials.js"
import { DiscoveryFailed, discover, type GatewayEndpoints } from "../../src/connect/discovery.js"
import { SessionEnded, TokenSource } from "../../src/connect/token-source.js"
import { Browser, signIn } from "../support/oauth-client.js"
import { oauthGateway } from "../support/oauth-gateway.js"
import { admits } from "../support/oauth-session.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

/** The person at the browser: opens the address, signs in (TOTP at `atMs`), lands on the loopback page. */
const person = (origin: string, totp: { secret?: Uint8Array }) => async (url: string, atMs: number) => {
  const browser = new Browser(origin)
  let last = await browser.follow(await browser.get(url))
  if (last.status === 200) last = await signIn(browser, last, { totp, nowMs: atMs })
  const callback = last.headers.get("location")
  if (callback === null) throw new Error(`no redirect to the bridge: ${last.status}`)
  return (await fetch(callback)).text()
}

const source = (
  endpoints: GatewayEndpoints,
  file: string,
  clock: { now: number },
  onUrl: (url: string) => void,
  counts: { signIns: number }
) =>
  new TokenSource({
    endpoints,
    clientId: "cli",
    credentialsFile: file,
    refreshMarginSeconds: 60,
    say: () => {},
    now: () => clock.now,
    signIn: (tell) => {
      counts.signIns++
      return Effect.runPromise(
        loopbackLogin({
          issuer: endpoints.issuer,
          authorizationEndpoint: endpoints.authorizationEndpoint,
          tokenEndpoint: endpoints.tokenEndpoint,
          client: { id: "cli", redirect_uris: ["http://127.0.0.1/callback"], resources: [endpoints.resource] },
          resource: endpoints.resource,
          scope: endpoints.scopes.join(" "),
          onAuthorizationUrl: (url) => {
            tell(url)
            onUrl(url)
          }
        })
      )
    }
  })

describe("gateway connect: sign-in and tokens", () => {
  it.scopedLive(
    "signs in once, keeps only the refresh token (0600), renews before expiry once for concurrent requests, reuses the file next run, and says clearly when the session was revoked",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway()
        const dir = yield* Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "gateway-connect-"))),
          (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
        )
        const file = join(dir, "nested", "credentials.json")
        const endpoints = yield* promise(() => discover(gateway.mcpUrl))
        expect(endpoints).toMatchObject({
          resource: gateway.mcpUrl,
          issuer: gateway.issuer,
          tokenEndpoint: `${gateway.issuer}/token`
        })
        expect(endpoints.scopes).toContain("offline_access")

        const totp: { secret?: Uint8Array } = {}
        const atBrowser = person(gateway.baseUrl, totp)
        const clock = { now: Date.now() }
        const counts = { signIns: 0 }
        const landed: Array<Promise<string>> = []
        let signInAt = Date.now()
        const openInBrowser = (url: string) => {
          landed.push(atBrowser(url, signInAt))
        }
        const tokens = source(endpoints, file, clock, openInBrowser, counts)

        const first = yield* promise(() => tokens.token())
        expect(yield* promise(() => landed[0]!)).toContain("You are signed in")
        expect(yield* admits(gateway, first)).toBe("admitted")
        const saved = JSON.parse(readFileSync(file, "utf8")) as Record<string, string>
        expect(statSync(file).mode & 0o777).toBe(0o600)
        expect(statSync(join(dir, "nested")).mode & 0o777).toBe(0o700)
        expect(saved).toMatchObject({ resource: gateway.mcpUrl, issuer: gateway.issuer, client_id: "cli" })
        expect(JSON.stringify(saved)).not.toContain(first)
        // Within the token's life: the same token, no round trip.
        expect(yield* promise(() => tokens.token())).toBe(first)

        // Past the renewal point (expiry minus the margin): eight requests at once, one refresh.
        clock.now += 600_000 - 59_000
        const renewed = yield* promise(() => Promise.all(Array.from({ length: 8 }, () => tokens.token())))
        expect(new Set(renewed).size).toBe(1)
        expect(renewed[0]).not.toBe(first)
        expect(yield* admits(gateway, renewed[0]!)).toBe("admitted")
        const rotated = JSON.parse(readFileSync(file, "utf8")) as Record<string, string>
        expect(rotated["refresh_token"]).not.toBe(saved["refresh_token"])

        // The next run of the bridge uses the stored sign-in: a refresh, no browser.
        const nextRun = source(endpoints, file, { now: Date.now() }, openInBrowser, counts)
        const nextToken = yield* promise(() => nextRun.token())
        expect(yield* admits(gateway, nextToken)).toBe("admitted")
        expect(counts.signIns).toBe(1)

        // Revocation: an old refresh token presented again revokes the whole session (reuse detection).
        const reuse = yield* promise(() =>
          fetch(endpoints.tokenEndpoint, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({
              grant_type: "refresh_token",
              client_id: "cli",
              refresh_token: saved["refresh_token"]!
            })
          })
        )
        expect(reuse.status).toBe(400)
        expect(yield* admits(gateway, nextToken)).toMatch(/^session:/)
        // The gateway refused the access token (401): the renewal is refused too, and the answer says so.
        signInAt = Date.now() + 30_000
        const ended = yield* promise(() =>
          nextRun.unauthorized().then(
            () => undefined,
            (error: unknown) => error
          )
        )
        expect(ended).toBeInstanceOf(SessionEnded)
        expect((ended as SessionEnded).message).toMatch(
          /^Your gateway session has ended \(.+\)\. Sign in again in your browser: http:\/\/127\.0\.0\.1:\d+\/sso\/authorize\?\S+ — then retry\.$/
        )
        expect(() => readFileSync(file)).toThrow()
        // The new sign-in was already under way: the next request waits for it, then carries a new token.
        const again = yield* promise(() => nextRun.token())
        expect(counts.signIns).toBe(2)
        expect(yield* promise(() => landed[1]!)).toContain("You are signed in")
        expect(yield* admits(gateway, again)).toBe("admitted")
        expect(statSync(file).mode & 0o777).toBe(0o600)
      })
  )

  it.scopedLive("refuses a sign-in answer that names another issuer (RFC 9207: a mix-up)", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const landed: Array<Promise<string>> = []
      const atBrowser = person(gateway.baseUrl, {})
      const outcome = yield* loopbackLogin({
        // The bridge was told another issuer than the one that answers.
        issuer: `${gateway.baseUrl}/elsewhere`,
        authorizationEndpoint: `${gateway.issuer}/authorize`,
        tokenEndpoint: `${gateway.issuer}/token`,
        client: { id: "cli", redirect_uris: ["http://127.0.0.1/callback"], resources: [gateway.mcpUrl] },
        resource: gateway.mcpUrl,
        scope: "offline_access",
        onAuthorizationUrl: (url) => {
          landed.push(atBrowser(url, Date.now()))
        }
      }).pipe(Effect.flip)
      expect(outcome.message).toBe(
        `the sign-in answer names another issuer (${gateway.issuer}), not ${gateway.baseUrl}/elsewhere`
      )
      expect(yield* promise(() => landed[0]!)).toContain("The answer came from another issuer")
    })
  )

  it("refuses a credentials file others can read, like ssh does with private keys", () => {
    const dir = mkdtempSync(join(tmpdir(), "gateway-connect-"))
    try {
      const file = join(dir, "credentials.json")
      const endpoints: GatewayEndpoints = {
        resource: "http://127.0.0.1:1/mcp",
        issuer: "http://127.0.0.1:1/sso",
        authorizationEndpoint: "http://127.0.0.1:1/sso/authorize",
        tokenEndpoint: "http://127.0.0.1:1/sso/token",
        scopes: []
      }
      writeFileSync(file, "{}", { mode: 0o600 })
      chmodSync(file, 0o644)
      expect(() => source(endpoints, file, { now: 0 }, () => {}, { signIns: 0 })).toThrow(CredentialsError)
      expect(() => source(endpoints, file, { now: 0 }, () => {}, { signIns: 0 })).toThrow(/chmod 600/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("keeps each gateway's sign-in in its own file under XDG_CONFIG_HOME", () => {
    const a = defaultCredentialsFile("https://a.example/mcp", { XDG_CONFIG_HOME: "/x", HOME: "/home/u" })
    const b = defaultCredentialsFile("https://b.example/mcp", { HOME: "/home/u" })
    expect(a).toMatch(/^\/x\/gateway\/connect\/[0-9a-f]{16}\.json$/)
    expect(b).toMatch(/^\/home\/u\/\.config\/gateway\/connect\/[0-9a-f]{16}\.json$/)
  })

  it("refuses plain http to a non-loopback gateway and metadata that names another address", async () => {
    await expect(discover("http://gateway.example/mcp")).rejects.toThrow(/must use https/)
    await expect(discover("https://user:pw@gateway.example/mcp")).rejects.toThrow(DiscoveryFailed)
    await expect(discover("ftp://gateway.example/mcp")).rejects.toThrow(/not an http\(s\) address/)
  })
})
