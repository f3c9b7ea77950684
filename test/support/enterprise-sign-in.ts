import { Effect } from "effect"
import { LogCapture } from "./logs.js"
import { Browser, beginCodeFlow } from "./oauth-client.js"
import { type OAuthGateway, oauthGateway } from "./oauth-gateway.js"
import { type OidcProvider, type OidcProviderOptions, startOidcProvider } from "./oidc-provider.js"

/** The variable the test gateways read the upstream client secret from. */
export const UPSTREAM_SECRET_ENV = "UPSTREAM_CLIENT_SECRET"

/** `auth.sso.upstream` for `provider` (OIDC): its client, the test scopes and claims, its test CA. */
export const upstreamSettings = (provider: OidcProvider) => ({
  protocol: "oidc",
  issuer: provider.issuer,
  client_id: provider.clientId,
  client_secret_env: UPSTREAM_SECRET_ENV,
  scopes: ["openid", "profile", "corp"],
  name_claim: "name",
  groups_claim: "groups",
  departments_claim: "departments",
  ca_file: provider.ca.caFile
})

/** The test OpenID Provider for a gateway whose callback is on `port`, closed with the scope. */
export const providerForPort = (port: number, options: Omit<OidcProviderOptions, "redirectUri"> = {}) =>
  Effect.acquireRelease(
    Effect.promise(() => startOidcProvider({ redirectUri: `http://127.0.0.1:${port}/sso/callback`, ...options })),
    (started) => Effect.promise(() => started.close())
  )

/** An in-process gateway whose `auth.sso.upstream` is `provider` (OIDC), trusting its test CA. */
export const gatewayWithUpstream = (
  port: number,
  provider: OidcProvider,
  upstream: Record<string, unknown> = {},
  sso: Record<string, unknown> = {},
  env: Record<string, string> = {}
) =>
  Effect.gen(function* () {
    const logs = new LogCapture()
    const gateway = yield* oauthGateway({
      port,
      logs,
      env: { [UPSTREAM_SECRET_ENV]: provider.clientSecret, ...env },
      auth: () => ({
        sso: {
          upstream: { ...upstreamSettings(provider), ...upstream },
          ...sso
        }
      })
    })
    return { gateway, logs }
  })

/** The address of the sign-in page's "sign in with your organization" link. */
export const upstreamLink = (html: string) => {
  const match = /id="upstream-sign-in" href="([^"]+)"/.exec(html)
  if (match?.[1] === undefined) throw new Error(`no upstream sign-in link on the page:\n${html}`)
  return match[1].replaceAll("&amp;", "&")
}

/**
 * A client's authorization through the gateway, signing in at the provider as `accountId`: the
 * gateway's last answer (the redirect to the client, or a page) and the PKCE verifier.
 */
export const signInThroughUpstream = async (
  gateway: OAuthGateway,
  provider: OidcProvider,
  accountId: string,
  browser = new Browser(gateway.baseUrl),
  redirectUri = "http://127.0.0.1:50000/callback"
) => {
  const { response, verifier } = await beginCodeFlow(browser, redirectUri, { state: "client-state" })
  const page = await browser.follow(response)
  if (page.status !== 200) return { last: page, verifier, browser, callback: undefined }
  const toProvider = await browser.get(upstreamLink(await page.text()))
  const location = toProvider.headers.get("location")
  if (toProvider.status !== 303 || location === null)
    return { last: toProvider, verifier, browser, callback: undefined }
  provider.nextLogin = { accountId }
  const callback = await provider.signIn(location)
  const last = await browser.follow(await browser.get(callback.toString()))
  return { last, verifier, browser, callback }
}
