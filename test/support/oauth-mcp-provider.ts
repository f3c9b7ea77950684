import type { OAuthClientProvider, OAuthDiscoveryState } from "@modelcontextprotocol/client"

type Tokens = Parameters<OAuthClientProvider["saveTokens"]>[0]
type ClientInformation = Parameters<NonNullable<OAuthClientProvider["saveClientInformation"]>>[0]

/**
 * An MCP client's OAuth state held in memory, as a CLI would keep it on disk: the pre-registered
 * public client (`auth.sso.clients`; no dynamic registration), PKCE verifier, tokens, discovery. The
 * "browser" is the test: `authorizationUrl` is where the SDK asked to send the person.
 */
export class MemoryOAuthProvider implements OAuthClientProvider {
  authorizationUrl: URL | undefined
  private saved: Tokens | undefined
  private verifier = ""
  private discovery: OAuthDiscoveryState | undefined
  private information: ClientInformation

  constructor(
    private readonly redirect: string,
    issuer: string,
    clientId = "cli"
  ) {
    // Stamped with the issuer it is registered at, as the 2.x SDK expects stored client records to be.
    this.information = { client_id: clientId, issuer }
  }

  get redirectUrl() {
    return this.redirect
  }

  get clientMetadata() {
    return {
      redirect_uris: [this.redirect],
      client_name: "gateway test client",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      // Asked for when the resource names no scopes (its backends require none): a CLI wants refreshes.
      scope: "offline_access"
    }
  }

  clientInformation() {
    return this.information
  }
  saveClientInformation(information: ClientInformation) {
    this.information = information
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: Tokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state
  }
  discoveryState() {
    return this.discovery
  }
}
