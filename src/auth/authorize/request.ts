/** A checked authorization request: everything the sign-in needs to end in a code for this client. */
export interface AuthorizationRequest {
  readonly clientId: string
  /** The redirect URI exactly as the client sent it (a loopback port may differ from the registration). */
  readonly redirectUri: string
  readonly state: string | undefined
  readonly codeChallenge: string
  /** Granted scopes: requested ∩ supported, in request order. */
  readonly scope: ReadonlyArray<string>
  readonly resource: string
  readonly prompt: ReadonlySet<"none" | "login" | "consent">
}
