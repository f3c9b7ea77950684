import type { IncomingMessage, ServerResponse } from "node:http"
import { createServer } from "node:https"
import { exportJWK, generateKeyPair } from "jose"
import Provider from "oidc-provider"
import { Agent, fetch as undiciFetch } from "undici"
import { freePort } from "./gateway-process.js"
import { makeTestCa, type TestCa } from "./test-ca.js"

/**
 * A real, certified OpenID Provider (`oidc-provider` 8) over HTTPS with a CA the test makes
 * (test/support/test-ca.ts). Its protocol endpoints are the library's own — discovery, authorization
 * with PKCE, token, keys, ID-token signing; only the login and consent pages are scripted: the next
 * interaction signs in the account the test named with `nextLogin` (and the `acr` it names) and grants
 * what was asked. `signIn` plays the browser between the gateway and the provider with the CA trusted.
 */
export interface OidcProvider {
  readonly issuer: string
  readonly ca: TestCa
  readonly clientId: string
  readonly clientSecret: string
  /** Accounts by id: the claims the provider asserts for each. */
  readonly accounts: Map<string, Record<string, unknown>>
  nextLogin: { accountId: string; acr?: string } | undefined
  /** The authorization requests the provider received (their query parameters). */
  readonly authorizations: Array<URLSearchParams>
  /** Follows `authorizationUrl` through the provider until it redirects away; answers that address. */
  signIn(authorizationUrl: string): Promise<URL>
  close(): Promise<void>
}

export interface OidcProviderOptions {
  readonly redirectUri: string
  readonly tokenAuthMethod?: "client_secret_basic" | "client_secret_post"
}

export const startOidcProvider = async (options: OidcProviderOptions): Promise<OidcProvider> => {
  const ca = makeTestCa("oidc provider test CA")
  const port = await freePort()
  const issuer = `https://127.0.0.1:${port}`
  const { privateKey } = await generateKeyPair("RS256", { extractable: true })
  const jwk = { ...(await exportJWK(privateKey)), kid: "test-key", use: "sig", alg: "RS256" }
  const clientId = "gateway"
  const clientSecret = "upstream-client-secret-0123456789abcdef"
  const accounts = new Map<string, Record<string, unknown>>()
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUri],
        token_endpoint_auth_method: options.tokenAuthMethod ?? "client_secret_basic",
        grant_types: ["authorization_code"],
        response_types: ["code"]
      }
    ],
    jwks: { keys: [jwk] },
    pkce: { required: () => true },
    acrValues: ["urn:gateway:password", "urn:gateway:mfa"],
    claims: { openid: ["sub"], profile: ["name"], corp: ["groups", "departments", "tid"] },
    // Scope claims go into the ID token (the gateway reads only verified ID-token claims).
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    cookies: { keys: ["test-cookie-key-0123456789"] },
    ttl: { AccessToken: 600, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
    findAccount: (_ctx: unknown, id: string) => {
      const claims = accounts.get(id)
      return claims === undefined ? undefined : { accountId: id, claims: () => ({ sub: id, ...claims }) }
    }
  } as ConstructorParameters<typeof Provider>[1])
  const handler = provider.callback()

  const state: OidcProvider = {
    issuer,
    ca,
    clientId,
    clientSecret,
    accounts,
    nextLogin: undefined,
    authorizations: [],
    signIn: async (authorizationUrl) => {
      const agent = new Agent({ connect: { ca: ca.caPem } })
      const cookies = new Map<string, string>()
      let url = new URL(authorizationUrl)
      try {
        for (let hops = 0; hops < 12; hops++) {
          if (url.origin !== issuer) return url
          const response = await undiciFetch(url, {
            redirect: "manual",
            dispatcher: agent,
            headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join("; ") }
          })
          for (const line of response.headers.getSetCookie()) {
            const [pair = ""] = line.split(";")
            const index = pair.indexOf("=")
            cookies.set(pair.slice(0, index).trim(), pair.slice(index + 1).trim())
          }
          const location = response.headers.get("location")
          if (location === null) throw new Error(`the provider answered ${response.status}: ${await response.text()}`)
          url = new URL(location, url)
        }
        throw new Error("too many redirects at the provider")
      } finally {
        await agent.close()
      }
    },
    close: async () => {
      await new Promise((done) => server.close(done))
      server.closeAllConnections()
      ca.remove()
    }
  }

  /** The scripted login and consent pages. */
  const interaction = async (request: IncomingMessage, response: ServerResponse) => {
    const details = await provider.interactionDetails(request, response)
    if (details.prompt.name === "login") {
      const login = state.nextLogin
      if (login === undefined) throw new Error("the test named no account to sign in")
      await provider.interactionFinished(request, response, {
        login: { accountId: login.accountId, ...(login.acr === undefined ? {} : { acr: login.acr }) }
      })
      return
    }
    const grant = new provider.Grant({ accountId: String(details.session?.accountId), clientId })
    const scope = details.params["scope"]
    if (typeof scope === "string") grant.addOIDCScope(scope)
    await provider.interactionFinished(
      request,
      response,
      { consent: { grantId: await grant.save() } },
      { mergeWithLastSubmission: true }
    )
  }

  const server = createServer({ key: ca.key, cert: ca.cert }, (request, response) => {
    const url = new URL(request.url ?? "/", issuer)
    if (url.pathname === "/auth") state.authorizations.push(url.searchParams)
    if (url.pathname.startsWith("/interaction/")) {
      interaction(request, response).catch((error: unknown) => {
        response.statusCode = 500
        response.end(String(error))
      })
      return
    }
    handler(request, response)
  })
  await new Promise<void>((done) => server.listen(port, "127.0.0.1", done))
  return state
}
