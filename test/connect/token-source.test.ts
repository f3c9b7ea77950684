/**
 * `gateway connect`'s sign-in and tokens (docs/clients.md) against a real in-process gateway: discovery
 * from the gateway's own metadata, the browser sign-in through the loopback client, the refresh token
 * kept in a file only the user can read, renewal before expiry (a moved clock), one renewal for many
 * concurrent requests, reuse of the stored sign-in by the next run, and a clear answer when the session
 * has been revoked, with a new sign-in already under way.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { loopbackLogin } from "../../src/cli/loopback-login.js"
import {
  CredentialsError,
  defaultCredentialsFile,
  LOCK_STALE_MS,
  writeCredentials
} from "../../src/connect/credentials.js"
import { DiscoveryFailed, discover, type GatewayEndpoints } from "../../src/connect/discovery.js"
import { SessionEnded, TokenSource } from "../../src/connect/token-source.js"
import { Browser, signIn } from "../support/oauth-client.js"
import { type OAuthGateway, oauthGateway } from "../support/oauth-gateway.js"
import { admits } from "../support/oauth-session.js"

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

/** Discovery, a temporary credentials file, and the person's browser whose sign-ins the test completes. */
const bridgeSetup = (gateway: OAuthGateway) =>
  Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "gateway-connect-"))),
      (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
    )
    const endpoints = yield* promise(() => discover(gateway.mcpUrl))
    const urls: Array<string> = []
    return { endpoints, file: join(dir, "credentials.json"), urls, atBrowser: person(gateway.baseUrl, {}) }
  })

/**
 * The person at the browser: opens the address, signs in (TOTP at `atMs`), lands on the loopback page
 * (whose address `tamper` may change first, as an attacker in the middle could).
 */
const person =
  (origin: string, totp: { secret?: Uint8Array }) =>
  async (url: string, atMs: number, tamper: (callback: URL) => void = () => {}) => {
    const browser = new Browser(origin)
    let last = await browser.follow(await browser.get(url))
    if (last.status === 200) last = await signIn(browser, last, { totp, nowMs: atMs })
    const location = last.headers.get("location")
    if (location === null) throw new Error(`no redirect to the bridge: ${last.status}`)
    const callback = new URL(location)
    tamper(callback)
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
          issParameterSupported: endpoints.issParameterSupported,
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
        expect(endpoints.issParameterSupported).toBe(true)

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
        // The answer says where to look; the address itself (with its state and loopback port) is only
        // printed and opened.
        expect((ended as SessionEnded).message).toBe(
          "Your gateway session has ended (The session was revoked; sign in again.). Sign in again in your " +
            "browser: the bridge opens the sign-in page (unless run with --no-browser) and prints its address on " +
            "its standard error (the MCP client's log for this server) — then retry."
        )
        expect(landed).toHaveLength(2)
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

  it.scopedLive(
    "two bridges sharing one credentials file renew concurrently, one at a time under its lock, each with the newest refresh token: the session survives",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway()
        const { endpoints, file, urls, atBrowser } = yield* bridgeSetup(gateway)
        const clock = { now: Date.now() }
        const counts = { signIns: 0 }
        const first = source(endpoints, file, clock, (url) => urls.push(url), counts)
        const signingIn = first.token()
        yield* promise(() => expect.poll(() => urls.length).toBe(1))
        yield* promise(() => atBrowser(urls[0]!, Date.now()))
        yield* promise(() => signingIn)
        // A second MCP client of the same person starts its bridge on the same file.
        const second = source(endpoints, file, clock, (url) => urls.push(url), counts)
        for (let round = 0; round < 3; round++) {
          // Both past their renewal point at once, each with several requests waiting.
          clock.now += 600_000
          const [fromFirst, fromSecond] = yield* promise(() =>
            Promise.all([
              Promise.all(Array.from({ length: 4 }, () => first.token())),
              Promise.all(Array.from({ length: 4 }, () => second.token()))
            ])
          )
          expect(new Set(fromFirst).size).toBe(1)
          expect(new Set(fromSecond).size).toBe(1)
          expect(yield* admits(gateway, fromFirst[0]!)).toBe("admitted")
          expect(yield* admits(gateway, fromSecond[0]!)).toBe("admitted")
        }
        // No refresh token was presented twice: no revocation, no new sign-in, the lock is gone.
        expect(counts.signIns).toBe(1)
        expect(urls).toHaveLength(1)
        expect(existsSync(`${file}.lock`)).toBe(false)
      })
  )

  it.scopedLive("a renewal waits while another bridge holds the lock, and takes over a lock left stale", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const { endpoints, file, urls, atBrowser } = yield* bridgeSetup(gateway)
      const clock = { now: Date.now() }
      const tokens = source(endpoints, file, clock, (url) => urls.push(url), { signIns: 0 })
      const signingIn = tokens.token()
      yield* promise(() => expect.poll(() => urls.length).toBe(1))
      yield* promise(() => atBrowser(urls[0]!, Date.now()))
      const first = yield* promise(() => signingIn)

      // Another bridge is renewing (its lock is fresh): this renewal waits for it to finish.
      writeFileSync(`${file}.lock`, "4242 another bridge\n", { mode: 0o600 })
      clock.now += 600_000
      let settled = false
      const waiting = tokens.token().finally(() => {
        settled = true
      })
      yield* Effect.sleep("400 millis")
      expect(settled).toBe(false)
      rmSync(`${file}.lock`)
      const renewed = yield* promise(() => waiting)
      expect(renewed).not.toBe(first)
      expect(yield* admits(gateway, renewed)).toBe("admitted")

      // A lock older than 30 s was left by a bridge that stopped: taken over at once, then removed.
      writeFileSync(`${file}.lock`, "4243 a bridge that crashed\n", { mode: 0o600 })
      const longAgo = new Date(Date.now() - LOCK_STALE_MS - 5_000)
      utimesSync(`${file}.lock`, longAgo, longAgo)
      clock.now += 600_000
      const started = Date.now()
      const again = yield* promise(() => tokens.token())
      expect(Date.now() - started).toBeLessThan(5_000)
      expect(yield* admits(gateway, again)).toBe("admitted")
      expect(existsSync(`${file}.lock`)).toBe(false)
    })
  )

  it.scopedLive(
    "a refused renewal removes the credentials file only if it still holds the refresh token that was refused",
    () =>
      Effect.gen(function* () {
        const gateway = yield* oauthGateway()
        const { endpoints, file, urls, atBrowser } = yield* bridgeSetup(gateway)
        const tokens = source(endpoints, file, { now: Date.now() }, (url) => urls.push(url), { signIns: 0 })
        const signingIn = tokens.token()
        yield* promise(() => expect.poll(() => urls.length).toBe(1))
        yield* promise(() => atBrowser(urls[0]!, Date.now()))
        yield* promise(() => signingIn)
        const ours = (JSON.parse(readFileSync(file, "utf8")) as { refresh_token: string }).refresh_token
        // The file now holds another sign-in (another client's), and ours is used elsewhere: reuse detection
        // revokes our session.
        const another = {
          version: 1 as const,
          resource: endpoints.resource,
          issuer: endpoints.issuer,
          client_id: "another-client",
          refresh_token: "another sign-in's refresh token",
          saved_at: new Date().toISOString()
        }
        writeCredentials(file, another)
        const used = yield* promise(() =>
          fetch(endpoints.tokenEndpoint, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ grant_type: "refresh_token", client_id: "cli", refresh_token: ours })
          })
        )
        expect(used.status).toBe(200)
        const ended = yield* promise(() =>
          tokens.unauthorized().then(
            () => undefined,
            (error: unknown) => error
          )
        )
        expect(ended).toBeInstanceOf(SessionEnded)
        // Not ours to remove: the other sign-in is still there.
        expect(JSON.parse(readFileSync(file, "utf8"))).toEqual(another)
        // The new sign-in carries on as usual.
        yield* promise(() => expect.poll(() => urls.length).toBe(2))
        yield* promise(() => atBrowser(urls[1]!, Date.now() + 30_000))
        expect(yield* admits(gateway, yield* promise(() => tokens.token()))).toBe("admitted")
      })
  )

  it.scopedLive("refuses a sign-in answer without iss when the issuer says its answers always name it (RFC 9207)", () =>
    Effect.gen(function* () {
      const gateway = yield* oauthGateway()
      const endpoints = yield* promise(() => discover(gateway.mcpUrl))
      expect(endpoints.issParameterSupported).toBe(true)
      const landed: Array<Promise<string>> = []
      const atBrowser = person(gateway.baseUrl, {})
      const outcome = yield* loopbackLogin({
        issuer: endpoints.issuer,
        authorizationEndpoint: endpoints.authorizationEndpoint,
        tokenEndpoint: endpoints.tokenEndpoint,
        issParameterSupported: endpoints.issParameterSupported,
        client: { id: "cli", redirect_uris: ["http://127.0.0.1/callback"], resources: [gateway.mcpUrl] },
        resource: gateway.mcpUrl,
        scope: "offline_access",
        onAuthorizationUrl: (url) => {
          landed.push(atBrowser(url, Date.now(), (callback) => callback.searchParams.delete("iss")))
        }
      }).pipe(Effect.flip)
      expect(outcome.message).toBe(
        `the sign-in answer does not name its issuer (iss), which ${gateway.issuer} always does`
      )
      expect(yield* promise(() => landed[0]!)).toContain("The answer did not name its issuer")
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
        scopes: [],
        issParameterSupported: true
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
