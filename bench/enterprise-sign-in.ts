import * as oauth from "oauth4webapi"
import { Agent, fetch as undiciFetch } from "undici"
import { UPSTREAM_SECRET_ENV, upstreamLink } from "../test/support/enterprise-sign-in.js"
import { Browser, beginCodeFlow, callbackParams, exchange } from "../test/support/oauth-client.js"
import { type OidcProvider, startOidcProvider } from "../test/support/oidc-provider.js"
import { startAuthGateway } from "./support/auth-gateway.js"
import { freePort } from "./support/http.js"
import { percentile } from "./support/stats.js"
import { formatMs, formatTimes, type Table } from "./support/table.js"

export const name = "enterprise-sign-in"

const ROUNDS = 40
const WARMUP = 5

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

export const run = async (): Promise<Table> => {
  const port = await freePort()
  const redirectUri = `http://127.0.0.1:${port}/sso/callback`
  const provider = await startOidcProvider({ redirectUri })
  provider.accounts.set("bench-user", { name: "Bench", groups: ["eng", "ops"], departments: ["R&D"] })
  const gateway = await startAuthGateway("sqlite", {
    port,
    env: { [UPSTREAM_SECRET_ENV]: provider.clientSecret },
    sso: {
      bootstrap_subjects: ["bench-user"],
      upstream: {
        protocol: "oidc",
        issuer: provider.issuer,
        client_id: provider.clientId,
        client_secret_env: UPSTREAM_SECRET_ENV,
        scopes: ["openid", "profile", "corp"],
        groups_claim: "groups",
        departments_claim: "departments",
        ca_file: provider.ca.caFile
      }
    }
  })
  const agent = new Agent({ connect: { ca: provider.ca.caPem } })
  try {
    const direct = await timed(ROUNDS, () => providerRoundTrip(provider, redirectUri, agent))
    const through = await timed(ROUNDS, () => gatewayRoundTrip(gateway.origin, provider))
    const row = (label: string, latencies: ReadonlyArray<number>) => [
      label,
      formatMs(percentile(latencies, 50)),
      formatMs(percentile(latencies, 99)),
      formatTimes(percentile(latencies, 50), percentile(direct, 50))
    ]
    return {
      title: `Enterprise sign-in round trip (OIDC, oidc-provider over HTTPS; ${ROUNDS} sign-ins after ${WARMUP} warm-up, SQLite)`,
      columns: ["path", "p50", "p99", "p50 vs provider alone"],
      rows: [
        row("provider alone: authorize + code exchange", direct),
        row("through the gateway: /sso/authorize → provider → /sso/callback → /sso/token", through)
      ],
      notes: [
        "The gateway's path adds its own authorization request, the sign-in page, ID-token and key checks, storing the person and their groups, and its own code exchange."
      ]
    }
  } finally {
    await agent.close()
    await gateway.close()
    await provider.close()
  }
}
