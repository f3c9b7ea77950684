import * as oauth from "oauth4webapi"
import { Agent, fetch as undiciFetch } from "undici"
import { MAX_CONCURRENT_SIGN_INS, MAX_WAITING_SIGN_INS } from "../src/identity/ldap/sign-in.js"
import { UPSTREAM_SECRET_ENV, upstreamLink, upstreamSettings } from "../test/support/enterprise-sign-in.js"
import { Browser, beginCodeFlow, callbackParams, exchange } from "../test/support/oauth-client.js"
import { type OidcProvider, startOidcProvider } from "../test/support/oidc-provider.js"
import { directorySettings, makeLdapCertificates, startSlapd, USERS } from "../test/support/slapd.js"
import { startAuthGateway } from "./support/auth-gateway.js"
import { freePort } from "./support/http.js"
import {
  directSignIn,
  enableEveryone,
  openConnections,
  openSignIn,
  postOver,
  postSignIn,
  redeem,
  saveLdapConnection,
  watchDirectory
} from "./support/ldap.js"
import { percentile } from "./support/stats.js"
import { formatCount, formatMs, formatTimes, type Table } from "./support/table.js"

export const name = "enterprise-sign-in"

const ROUNDS = 40
const WARMUP = 5
/** LDAP sign-ins posted at once, each from its own client address: more than the 16 running and 64 waiting. */
const BURST = 200
/** The people of the burst (correct passwords), taking turns: 40 each, under every throttle window. */
const BURST_USERS = [USERS.alice, USERS.bob, USERS.dave, USERS.kim, USERS.juergen]

/**
 * The provider alone, as any relying party would use it: authorization request (its scripted login),
 * then the code exchanged at its token endpoint with the client secret — the baseline.
 */
const providerRoundTrip = async (provider: OidcProvider, redirectUri: string, agent: Agent) => {
  const verifier = oauth.generateRandomCodeVerifier()
  const url = new URL(`${provider.issuer}/auth`)
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: provider.clientId,
    redirect_uri: redirectUri,
    scope: "openid profile corp",
    state: "s",
    nonce: oauth.generateRandomNonce(),
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256"
  }).toString()
  provider.nextLogin = { accountId: "bench-user" }
  const back = await provider.signIn(url.toString())
  const response = await undiciFetch(`${provider.issuer}/token`, {
    method: "POST",
    dispatcher: agent,
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${provider.clientId}:${provider.clientSecret}`).toString("base64")}`
    },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: back.searchParams.get("code") ?? "",
      redirect_uri: redirectUri,
      code_verifier: verifier
    }).toString()
  })
  if (response.status !== 200) throw new Error(`provider token endpoint answered ${response.status}`)
  await response.json()
}

/** A client's whole sign-in through the gateway and the provider, ending with the gateway's tokens. */
const gatewayRoundTrip = async (origin: string, provider: OidcProvider) => {
  const browser = new Browser(origin)
  const redirectUri = "http://127.0.0.1:50000/cb"
  const { response, verifier } = await beginCodeFlow(browser, redirectUri, { state: "s" })
  const page = await browser.follow(response)
  const toProvider = await browser.get(upstreamLink(await page.text()))
  provider.nextLogin = { accountId: "bench-user" }
  const callback = await provider.signIn(toProvider.headers.get("location") ?? "")
  const last = await browser.follow(await browser.get(callback.toString()))
  const code = callbackParams(last).get("code") ?? ""
  const { response: tokens } = await exchange(origin, {
    code,
    verifier,
    redirectUri,
    clientId: "cli",
    callback: new URLSearchParams()
  })
  if (tokens.status !== 200) throw new Error(`gateway token endpoint answered ${tokens.status}`)
}

const timed = async (rounds: number, once: () => Promise<void>) => {
  const latencies: Array<number> = []
  for (let round = 0; round < WARMUP + rounds; round++) {
    const started = performance.now()
    await once()
    if (round >= WARMUP) latencies.push(performance.now() - started)
  }
  return latencies
}

type Row = ReadonlyArray<string>

const row = (label: string, latencies: ReadonlyArray<number>, baseline: ReadonlyArray<number> | undefined): Row => [
  label,
  formatMs(percentile(latencies, 50)),
  formatMs(percentile(latencies, 99)),
  baseline === undefined ? "—" : formatTimes(percentile(latencies, 50), percentile(baseline, 50))
]

const oidcRows = async (): Promise<ReadonlyArray<Row>> => {
  const port = await freePort()
  const redirectUri = `http://127.0.0.1:${port}/sso/callback`
  const provider = await startOidcProvider({ redirectUri })
  provider.accounts.set("bench-user", { name: "Bench", groups: ["eng", "ops"], departments: ["R&D"] })
  const gateway = await startAuthGateway("sqlite", {
    port,
    env: { [UPSTREAM_SECRET_ENV]: provider.clientSecret },
    sso: {
      bootstrap_subjects: ["bench-user"],
      upstream: upstreamSettings(provider)
    }
  })
  const agent = new Agent({ connect: { ca: provider.ca.caPem } })
  try {
    const direct = await timed(ROUNDS, () => providerRoundTrip(provider, redirectUri, agent))
    const through = await timed(ROUNDS, () => gatewayRoundTrip(gateway.origin, provider))
    return [
      row("OIDC: provider alone: authorize + code exchange", direct, direct),
      row("OIDC: through the gateway: /sso/authorize → provider → /sso/callback → /sso/token", through, direct)
    ]
  } finally {
    await agent.close()
    await gateway.close()
    await provider.close()
  }
}

interface BurstResult {
  readonly completed: number
  readonly busy: number
  readonly throttled: number
  readonly other: ReadonlyArray<number>
  /** How long the completed ones took, and the refused ones. */
  readonly completedMs: ReadonlyArray<number>
  readonly refusedMs: ReadonlyArray<number>
  readonly totalMs: number
  readonly mostSignIns: number
  readonly mostBinds: number
}

/**
 * `BURST` sign-ins opened one by one, each from its own address (X-Forwarded-For through the trusted
 * loopback proxy), then their directory account forms posted all at once, each over a connection the
 * gateway has accepted already.
 */
const ldapBurst = async (origin: string, watch: ReturnType<typeof watchDirectory>): Promise<BurstResult> => {
  const opened = []
  for (let index = 0; index < BURST; index++) opened.push(await openSignIn(origin, `198.18.0.${index + 1}`))
  const agent = await openConnections(origin, BURST)
  watch.resetPeaks()
  const started = performance.now()
  const answers = await Promise.all(
    opened.map((each, index) => {
      const user = BURST_USERS[index % BURST_USERS.length] ?? USERS.alice
      return postOver(agent, origin, each, user.uid, user.password)
    })
  )
  const totalMs = performance.now() - started
  agent.destroy()
  return {
    completed: answers.filter((answer) => answer.code).length,
    busy: answers.filter((answer) => answer.status === 503).length,
    throttled: answers.filter((answer) => answer.status === 429).length,
    other: answers
      .filter((answer) => !answer.code && answer.status !== 503 && answer.status !== 429)
      .map((answer) => answer.status),
    completedMs: answers.filter((answer) => answer.code).map((answer) => answer.ms),
    refusedMs: answers.filter((answer) => !answer.code).map((answer) => answer.ms),
    totalMs,
    mostSignIns: watch.counts.mostSignIns,
    mostBinds: watch.counts.mostBinds
  }
}

const ldapRows = async (): Promise<{ readonly rows: ReadonlyArray<Row>; readonly burst: BurstResult }> => {
  const certificates = makeLdapCertificates()
  const slapd = await startSlapd(certificates, "verified")
  try {
    const settings = directorySettings(slapd.ldapsUrl ?? "", certificates.caPem)
    const gateway = await startAuthGateway("sqlite", { server: { trusted_proxies: ["127.0.0.1"] } })
    const watch = watchDirectory()
    try {
      await saveLdapConnection(gateway, settings)
      // Everyone of the bench signs in once (arriving pending) and is enabled, so every sign-in ends with a code.
      for (const user of BURST_USERS) {
        const answer = await postSignIn(await openSignIn(gateway.origin), user.uid, user.password)
        if (answer.status !== 303) throw new Error(`${user.uid}'s first sign-in answered ${answer.status}`)
      }
      await enableEveryone(gateway, settings)
      const direct = await timed(ROUNDS, () => directSignIn(settings, "alice", USERS.alice.password))
      const posts: Array<number> = []
      const through = await timed(ROUNDS, async () => {
        const opened = await openSignIn(gateway.origin)
        const started = performance.now()
        const answer = await postSignIn(opened, "alice", USERS.alice.password)
        posts.push(performance.now() - started)
        await redeem(gateway.origin, opened, answer)
      })
      const burst = await ldapBurst(gateway.origin, watch)
      return {
        rows: [
          row("LDAP: authenticate() alone: service bind, user search, user bind, group search", direct, direct),
          row("LDAP: POST /sso/login/ldap: the directory, the person admitted, the code", posts.slice(WARMUP), direct),
          row(
            "LDAP: through the gateway: /sso/authorize → sign-in page → /sso/login/ldap → /sso/token",
            through,
            direct
          ),
          row(`LDAP: ${BURST} POST /sso/login/ldap at once: those that completed`, burst.completedMs, undefined)
        ],
        burst
      }
    } finally {
      watch.restore()
      await gateway.close()
    }
  } finally {
    await slapd.stop()
    certificates.remove()
  }
}

export const run = async (): Promise<Table> => {
  const oidc = await oidcRows()
  const ldap = await ldapRows()
  const { burst } = ldap
  return {
    title: `Enterprise sign-in (OIDC: oidc-provider over HTTPS; LDAP: OpenLDAP over ldaps://; ${ROUNDS} sign-ins after ${WARMUP} warm-up each, SQLite)`,
    columns: ["path", "p50", "p99", "p50 vs baseline"],
    rows: [...oidc, ...ldap.rows],
    notes: [
      "Baselines: the OIDC provider alone, and LDAP's `authenticate` called directly in the gateway's process (two TLS connections: two binds and two searches).",
      "The gateway's OIDC path adds its own authorization request, the sign-in page, ID-token and key checks, storing the person and their groups, and its own code exchange; its LDAP path adds the sign-in throttle, the concurrency bound, storing the person and their groups, and the code.",
      `LDAP burst: ${BURST} sign-ins of ${BURST_USERS.length} people from ${BURST} addresses, posted at once: ` +
        `${formatCount(burst.completed)} completed, ${formatCount(burst.busy)} refused as busy (503), ` +
        `${formatCount(burst.throttled)} throttled (429)` +
        (burst.other.length === 0 ? "" : `, ${burst.other.length} other (${[...new Set(burst.other)].join(", ")})`) +
        `, in ${formatMs(burst.totalMs)}` +
        (burst.refusedMs.length === 0
          ? ""
          : `; the refused answered in ${formatMs(percentile(burst.refusedMs, 50))} (p50)`) +
        `. At most ${burst.mostSignIns} sign-ins at the directory at once ` +
        `(bound: ${MAX_CONCURRENT_SIGN_INS} running, ${MAX_WAITING_SIGN_INS} waiting), at most ${burst.mostBinds} binds in flight ` +
        "(observed by wrapping ldapts' client in the bench's process)."
    ]
  }
}
